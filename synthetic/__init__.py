"""``stam.synthetic``: nonconvex three-block problems with known constants on which STAM is
run and held against Theorem conv and Theorem conv-rate."""
