"""``stam.figures``: figures, tables, the HTML report and ``stam demo``."""
