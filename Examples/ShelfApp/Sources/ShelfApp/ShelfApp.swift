import Foundation
import HomeportClient
import ShelfKit
import SwiftUI

/// Shelf: the reading list of the person's BookOrbit servers.
@main
struct ShelfApp: App {
    /// The app group shared with the notification service extension (the server list).
    static let appGroup = "group.org.example.shelf"
    /// The Keychain access group shared with it (the session tokens).
    static let keychainGroup = "ABCDE12345.org.example.shelf"

    #if os(iOS)
        @UIApplicationDelegateAdaptor(PushDelegate.self) private var pushDelegate
    #endif
    @State private var shelf: Shelf
    /// Tells the client when the phone changes network, so that it checks the addresses again
    /// before a token goes anywhere.
    private let pathMonitor: NetworkPathMonitor

    init() {
        let container =
            FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: Self.appGroup)
            ?? URL.applicationSupportDirectory.appending(path: "Shelf")
        do {
            let client = try Shelf.makeClient(
                stateDirectory: container.appending(path: "homeport").path(percentEncoded: false),
                vault: KeychainVault(accessGroup: Self.keychainGroup))
            // A debug build takes plain HTTP too: the BookOrbit server on the developer's machine.
            #if DEBUG
                let shelf = Shelf(client: client, allowsPlainHTTP: true)
            #else
                let shelf = Shelf(client: client)
            #endif
            _shelf = State(initialValue: shelf)
            pathMonitor = NetworkPathMonitor(client: client)
            #if os(iOS)
                // Before any window: a tap on a notification may be what launches the app.
                PushDelegate.shelf = shelf
            #endif
        } catch {
            fatalError("Shelf cannot open its state directory: \(error)")
        }
    }

    var body: some Scene {
        WindowGroup {
            ShelfView(shelf: shelf)
                .task { await shelf.refresh() }
                .task { await shelf.follow() }
                // The stream of the server shown, from the moment this phone is signed in there.
                .task(id: shelf.isSignedIn ? shelf.selection : nil) { await shelf.watch() }
        }
    }
}
