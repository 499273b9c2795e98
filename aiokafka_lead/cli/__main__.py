import sys

from aiokafka_lead.cli import main

sys.exit(main())
