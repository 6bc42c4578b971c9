import Foundation
import HomeportAPNs
import HomeportServer
import HomeportWire

/// The push services a gateway sends to: APNs always; FCM and Web Push when it holds the app's
/// service account and VAPID key.
struct GatewayDeliveries: Sendable {
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
        for (provider, deliver) in [
            (PushProvider.webpush, webPush.map { $0.deliver }), (PushProvider.fcm, fcm.map { $0.deliver }),
        ] {
            let chosen = items.indices.filter { items[$0].provider == provider }
            guard let deliver, !chosen.isEmpty else { continue }
            for (index, response) in zip(chosen, deliver(chosen.map { items[$0] })) { responses[index] = response }
        }
        return responses
    }
}
