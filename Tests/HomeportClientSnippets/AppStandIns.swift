// What the article's snippets take from the app around them, and, off Apple platforms, from
// Apple's frameworks: declared here so that every Swift block of "Integrating Homeport in an iOS
// app" compiles (`scripts/test` builds this target; `ClientArticleSnippetTests` checks that each
// block stands here as the article shows it). Where the real frameworks exist, the blocks use them.
import Foundation
import HomeportClient
import HomeportWire

// The app's own parts the snippets call.
var connection: Connection { fatalError("the app's") }
func log(_ text: String) {}
func showPending(_ standing: Standing?) {}
func askForCode(sentTo email: String) async throws -> String { "" }
func askForSecondFactor(_ pending: HomeportClient.PendingSecondFactor) async throws -> String { "" }
func askToVerify(_ server: String, was old: InstanceID, now new: InstanceID, addresses: [String]) {}
func showSignedOut(_ server: String, note: String? = nil) {}
func showMoved(_ server: String, from: String, to: String) {}
func offerToRemove(_ address: ServerAddress, because reason: String) {}
func open(_ link: URL, on server: String) {}
func presentAlert(title: String, message: String?) {}
struct AppLogger {
    func error(_ text: String) {}
}
let logger = AppLogger()

#if !canImport(UIKit)
    /// UIKit's application, off Apple platforms.
    final class UIApplication {}
#endif

#if !canImport(SwiftUI)
    /// SwiftUI's few names the article uses, off Apple platforms.
    @MainActor protocol View {
        associatedtype Body
        var body: Body { get }
    }
    @propertyWrapper struct State<Value> {
        var wrappedValue: Value
    }
    struct Text: View {
        init(_ text: String) {}
        var body: Never { fatalError() }
    }
    struct List: View {
        init<Rows: RandomAccessCollection, ID: Hashable>(
            _ data: Rows, id: KeyPath<Rows.Element, ID>, rowContent: (Rows.Element) -> Text
        ) {}
        var body: Never { fatalError() }
        func task(_ action: @escaping @Sendable () async -> Void) -> List { self }
    }
#endif

#if !canImport(Security)
    /// The Keychain vault's shape, off Apple platforms (a memory vault here).
    final class KeychainVault: CredentialVault, @unchecked Sendable {
        private let memory = [String: String]()
        init(accessGroup: String) {}
        func token(for server: String) throws -> String? { memory[server] }
        func store(token: String, for server: String) throws {}
        func remove(server: String) throws {}
    }
#endif

#if !canImport(Network)
    /// The path monitor's shape, off Apple platforms.
    final class NetworkPathMonitor: Sendable {
        init(client: HomeportClient) {}
    }
#endif

#if !canImport(UserNotifications)
    /// UserNotifications' names the article uses, off Apple platforms.
    class UNNotificationContent {
        var userInfo: [AnyHashable: Any] = [:]
    }
    class UNNotificationRequest {
        let content = UNNotificationContent()
    }
    class UNNotificationServiceExtension {
        func didReceive(
            _ request: UNNotificationRequest,
            withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void
        ) {}
    }
    class UNNotification {
        let request = UNNotificationRequest()
    }
    class UNNotificationResponse {
        let notification = UNNotification()
    }
    class UNUserNotificationCenter {}
    enum NotificationServiceHelper {
        static func content(for request: UNNotificationRequest, client: HomeportClient) -> UNNotificationContent {
            request.content
        }
    }
#endif

#if !canImport(Darwin)
    extension FileManager {
        /// The app group's container, off Apple platforms.
        func containerURL(forSecurityApplicationGroupIdentifier group: String) -> URL? {
            temporaryDirectory.appending(path: group)
        }
    }
#endif
