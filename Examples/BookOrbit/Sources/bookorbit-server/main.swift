import BookOrbit
import HomeportServer

ServerCommandLine.main(product: .bookOrbit)
