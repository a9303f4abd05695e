from pmem_advisor.cli.main import main

raise SystemExit(main())
