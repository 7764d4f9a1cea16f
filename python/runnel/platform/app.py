"""tf.app: run(main, argv) as TF 1.x does it, over absl.app."""

import sys

from absl import app as _absl_app

from runnel.platform import flags


def _parse_flags_tolerate_undef(argv):
    """Parses the flags this program defined and leaves the others in argv
    (TF 1.x tolerates flags it does not know)."""
    return flags.FLAGS(sys.argv if argv is None else argv, known_only=True)


def run(main=None, argv=None):
    """Parses the command line, then exits with main(argv)'s result, where
    argv is what remains after the known flags (argv[0] first)."""
    main = main or sys.modules["__main__"].main
    _absl_app.run(main=main, argv=argv, flags_parser=_parse_flags_tolerate_undef)
