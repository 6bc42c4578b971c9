import HomeportServer

ServerCommandLine.main()
