"""``mirage eval``: agents on the same seeded chain episodes (:mod:`.runner`), their tables and
plots (:mod:`.report`), as a Slurm job array (:mod:`.array`), and the command (:mod:`.cli`)."""
