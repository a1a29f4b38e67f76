"""``stam.dnn``: binary-weight network training with STAM, BinaryConnect, BinaryRelax and PSGD
(Section 3 of the paper)."""
