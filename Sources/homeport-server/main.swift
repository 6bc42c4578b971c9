import HomeportGateway
import HomeportServer

ServerCommandLine.main(adding: [GatewayCommand.added])
