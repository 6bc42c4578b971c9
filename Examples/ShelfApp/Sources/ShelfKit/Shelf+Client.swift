import Foundation
import HomeportClient

extension Shelf {
    /// The client the app runs on: servers kept in `stateDirectory` (an app group's container,
    /// shared with the notification service extension), tokens in `vault` (the Keychain on
    /// Apple platforms), and BookOrbit's push block and deep links. The network path is the
    /// app's to tell (`NetworkPathMonitor`): reading it here could hold the main thread.
    public static func makeClient(stateDirectory: String, vault: any CredentialVault) throws -> HomeportClient {
        var configuration = ClientConfiguration()
        configuration.pushAppDataKey = "bookorbit"
        configuration.deepLinkScheme = "bookorbit"
        return HomeportClient(
            directory: try ServerDirectory(directory: stateDirectory), vault: vault,
            transport: HomeportClient.defaultTransport(), configuration: configuration)
    }
}
