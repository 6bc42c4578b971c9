import Foundation
import HomeportClient
import HomeportWire

final class Connection: Sendable {
    let client: HomeportClient
    let pathMonitor: NetworkPathMonitor

    init(onEvent: @escaping @Sendable (ClientEvent) -> Void) throws {
        let container = FileManager.default
            .containerURL(forSecurityApplicationGroupIdentifier: "group.org.example.books")!
        let directory = try ServerDirectory(
            directory: container.appending(path: "homeport").path(percentEncoded: false))
        let vault = KeychainVault(accessGroup: "ABCDE12345.org.example.books")
        client = HomeportClient(
            directory: directory, vault: vault, transport: HomeportClient.defaultTransport(),
            networkPath: SystemNetworkPath.current(), onEvent: onEvent)
        pathMonitor = NetworkPathMonitor(client: client)
    }
}
