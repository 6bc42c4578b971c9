import Dispatch
import Foundation
import HomeportAPNs
import HomeportServer
import HomeportWire
import Synchronization

/// The push services a gateway sends to: APNs always; FCM and Web Push when it holds the app's
/// service account and VAPID key.
///
/// A batch answers within the server's wait for it (``PushGatewaySettings/timeoutSeconds``, 50
/// seconds): APNs first, then Web Push and FCM side by side, each starting no request after
/// ``batchBudget`` (a push not started comes back unsent, and the server sends it again).
struct GatewayDeliveries: Sendable {
    /// How long the Web Push and FCM rounds start new requests in one batch (each request then
    /// has its 10 seconds).
    static let batchBudget: Duration = .seconds(15)

    let apns: APNsDelivery
    let webPush: WebPushDelivery?
    let fcm: FCMDelivery?

    /// Whether the gateway sends to `provider`.
    func carries(_ provider: PushProvider) -> Bool {
        switch provider {
        case .apns: true
        case .webpush: webPush != nil
        case .fcm: fcm != nil
        }
    }

    /// Sends each item to its service and returns the answers, in order. Apple's go first: when
    /// that throws, nothing of the batch was sent.
    func send(_ items: [OutboxItem]) throws -> [APNsResponse] {
        var responses = [APNsResponse](
            repeating: APNsResponse(status: 0, transportError: "not sent"), count: items.count)
        let apple = items.indices.filter { items[$0].provider == .apns }
        if !apple.isEmpty {
            let requests = apple.map { index in
                let item = items[index]
                return APNsRequest(
                    apnsID: item.apnsID, deviceToken: item.deviceToken, topic: item.topic,
                    // `malformed` refused any other priority.
                    payload: Data(item.payload.utf8), priority: APNsPriority(rawValue: item.priority) ?? .immediate,
                    expiration: item.expiration, collapseID: item.collapseID,
                    environment: item.environment == .sandbox ? .sandbox : .production)
            }
            for (index, response) in zip(apple, try apns.send(requests)) { responses[index] = response }
        }
        let web = webPush == nil ? [] : items.indices.filter { items[$0].provider == .webpush }
        let android = fcm == nil ? [] : items.indices.filter { items[$0].provider == .fcm }
        let answers = Mutex<(web: [APNsResponse], android: [APNsResponse])>(([], []))
        DispatchQueue.concurrentPerform(iterations: 2) { round in
            if round == 0, let webPush, !web.isEmpty {
                let sent = webPush.deliver(web.map { items[$0] })
                answers.withLock { $0.web = sent }
            } else if round == 1, let fcm, !android.isEmpty {
                let sent = fcm.deliver(android.map { items[$0] })
                answers.withLock { $0.android = sent }
            }
        }
        let sent = answers.withLock { $0 }
        for (index, response) in zip(web, sent.web) { responses[index] = response }
        for (index, response) in zip(android, sent.android) { responses[index] = response }
        return responses
    }
}
