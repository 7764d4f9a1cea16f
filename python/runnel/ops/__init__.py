"""Op wrappers: gen_ops (one function per registered op, generated from the
C++ registry at import) and the hand-written TF 1.x modules over them."""
