import Foundation
import HomeportClient
import HomeportWire

extension Shelf {
    /// Follows the shown server's notification stream until the task that runs it is cancelled
    /// (`.task(id: shelf.isSignedIn ? shelf.selection : nil)` starts it again for the next server,
    /// and after a sign-in). The client reconnects by itself, through whichever address answers,
    /// without losing or repeating a notification.
    public func watch() async {
        guard let watched = selection, isSignedIn else { return }
        do {
            for try await event in client.notificationStream(watched) {
                // Another server is shown now: what this stream says is not its.
                guard watched == selection else { return }
                switch event {
                case .connected(let via, _):
                    streamState = "live via \(via)"
                case .notification(let notification):
                    feed.insert(notification, at: 0)
                    if notification.c == BookOrbitAPI.loanReady { await refresh() }
                case .discarded:
                    break
                case .disconnected(let reason, _):
                    streamState = "reconnecting: \(reason)"
                }
            }
        } catch ClientError.signedOut {
            // The client told the app as an event (a notice); the stream ends here.
            streamState = nil
        } catch {
            streamState = nil
            show(error)
        }
    }

    /// Gives the device's push token to every server signed in on (and to each at its next
    /// sign-in). Call it from `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`.
    public func registerForPushes(token: Data, environment: PushEnvironment) async {
        do {
            _ = try await client.setDeviceToken(
                token.map { String(format: "%02x", $0) }.joined(), environment: environment)
        } catch {
            show(error)
        }
    }

    /// Opens a push the person tapped: shows the server that sent it (named by the push's `s`,
    /// never guessed) and returns where it leads. A push of a server not on this device opens
    /// nothing and says so.
    @discardableResult
    public func open(push payload: Data) async -> RoutedPush? {
        do {
            let routed = try await client.receivePush(payload)
            reload()
            guard let record = client.directory.server(routed.server) else { return nil }
            await select(record.localID)
            return routed
        } catch {
            show(error)
            return nil
        }
    }
}
