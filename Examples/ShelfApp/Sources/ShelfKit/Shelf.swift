import Foundation
import HomeportClient
import HomeportWire
import Observation

/// The app's state: the person's servers, the one shown and its books, what the app asks of the
/// person now, and its notifications. Views read it and call its methods; everything that talks
/// to a server goes through HomeportClient, which checks every address before a token goes there.
///
/// Run ``follow()`` for as long as the app runs (the server list and the client's events), and
/// ``watch()`` for as long as a server is shown (its notification stream):
///
/// ```swift
/// ContentView(shelf: shelf)
///     .task { await shelf.follow() }
///     .task(id: shelf.isSignedIn ? shelf.selection : nil) { await shelf.watch() }
/// ```
@MainActor @Observable
public final class Shelf {
    /// What the app asks of the person, shown as a sheet.
    public enum Step: Equatable, Sendable {
        /// The server at the typed address says who it is: sign in, create an account, or keep it.
        case preview(ServerPreview)
        /// The password was right: the account's second factor (a code of the authenticator app).
        case secondFactor(HomeportClient.PendingSecondFactor)
        /// The server mailed a code to the account's address.
        case emailCode(HomeportClient.PendingVerification)
        /// The account waits for the server's operator (`waiting`, `held`, …).
        case waiting(Standing?)
    }

    /// The client: its directory, its vault, its transport.
    public let client: HomeportClient
    /// Whether a typed `http://` address is taken (a LAN server without HTTPS). Off, only
    /// `https://` addresses are.
    public let allowsPlainHTTP: Bool
    /// The servers on this device, as stored.
    public internal(set) var servers: [ServerRecord]
    /// The handle of the server shown (``ServerRecord/localID``): it stays the same when the
    /// server's identity is reset, so the app may keep it (`@SceneStorage`).
    public internal(set) var selection: UUID?
    /// What the app asks of the person now, if anything.
    public internal(set) var step: Step?
    /// The shown server's books, as last read.
    public internal(set) var books: [ShelfBook] = []
    /// The shown server's notifications since it was shown, newest first.
    public internal(set) var feed: [StreamNotification] = []
    /// The notification stream's state, in words ("live via …", "reconnecting: …").
    public internal(set) var streamState: String?
    /// Something to tell the person; the view clears it once shown.
    public var notice: Notice?

    /// A shelf of `client`'s servers, the first one shown.
    public init(client: HomeportClient, allowsPlainHTTP: Bool = false) {
        self.client = client
        self.allowsPlainHTTP = allowsPlainHTTP
        servers = client.directory.all
        selection = servers.first?.localID
    }

    /// The server shown, as stored now.
    public var selected: ServerRecord? { selection.flatMap { id in servers.first { $0.localID == id } } }

    /// Whether the server shown has a session on this device.
    public var isSignedIn: Bool { selected.map { !$0.signedOut && !$0.email.isEmpty } ?? false }

    /// The address the server shown answered at last: another one than its primary after a
    /// failover.
    public var answeringAddress: String? { selected.flatMap { $0.lastWinner ?? $0.primary.url } }

    /// Follows the server list (changed here, by the notification service extension or by
    /// another process) and the client's events, until the task that runs it is cancelled.
    public func follow() async {
        let changes = client.directory.changes
        let events = client.events
        let following = [
            Task { @MainActor in
                for await _ in changes { self.reload() }
            },
            Task { @MainActor in
                for await event in events { self.handle(event) }
            },
        ]
        await withTaskCancellationHandler {
            for task in following { await task.value }
        } onCancel: {
            for task in following { task.cancel() }
        }
    }

    /// Reads the server list again (after a change made here or elsewhere): a server shown that
    /// is gone is shown no more, nor anything of it.
    func reload() {
        servers = client.directory.all
        if let selection, !servers.contains(where: { $0.localID == selection }) {
            self.selection = nil
            clearShown()
        }
    }

    /// What the app does on each of the client's events.
    func handle(_ event: ClientEvent) {
        switch event {
        case .identityChanged(let server, _, _, let unverified):
            // The primary answers as another installation (restored from a backup, reinstalled):
            // only the person knows whether it is theirs.
            notice = Notice(
                "\(name(of: server)) is another installation now.",
                advice: unverified.isEmpty
                    ? nil : "Its other addresses are not used until you check them again in its settings.")
        case .signedOut(let server):
            if selected?.key == server { clearShown() }
            notice = Notice("You were signed out of \(name(of: server)).", advice: "Sign in again to see your books.")
        case .primaryMoved(let server, _, let to):
            notice = Notice("\(name(of: server)) moved to \(to).")
        case .pushDevice(_, .registrationFailed(let reason)):
            notice = Notice("Notifications could not be set up.", advice: reason)
        case .pathChanged, .sessionReplaced, .pushDevice:
            break
        }
        reload()
    }

    /// A server's name for the person: its label, else its product and the start of its id.
    public func name(of key: String) -> String {
        guard let record = servers.first(where: { $0.key == key }) ?? client.directory.server(key) else { return key }
        return Self.name(of: record)
    }

    /// A record's name for the person.
    public static func name(of record: ServerRecord) -> String {
        if let label = record.label { return label }
        let id = record.instanceID.map { " " + $0.description.prefix(8) } ?? ""
        return (record.product ?? record.primary.url) + id
    }

    /// Forgets what was shown of the server shown.
    func clearShown() {
        books = []
        feed = []
        streamState = nil
    }

    /// Shows `error` to the person. A call the server refused as signed out forgets what was
    /// shown of that server at once (the client's event says so too, a moment later).
    func show(_ error: any Error) {
        guard !(error is CancellationError) else { return }
        if case ClientError.signedOut(let server) = error, selected?.key == server {
            clearShown()
            reload()
        }
        notice = Notice(error)
    }
}
