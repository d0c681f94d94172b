"""``python -m informers.crdgen``: the ``informers-gen`` command (:mod:`.command`)."""

import sys

from informers.crdgen.command import main

sys.exit(main())
