import HomeportAPNs
import HomeportWire

/// The sender's one transport over every push service this process sends to: APNs items to
/// Apple's transport (APNs itself or a push gateway), Web Push items to ``WebPushDelivery``, FCM
/// items to ``FCMDelivery``.
/// Apple's go first: a transport that throws has then sent nothing of the batch, so the rows
/// that wait out their lease and go again were not delivered already.
final class PushDispatch: PushTransport {
    private let apns: (any PushTransport)?
    private let webPush: WebPushDelivery?
    private let fcm: FCMDelivery?

    init(apns: (any PushTransport)?, webPush: WebPushDelivery?, fcm: FCMDelivery?) {
        self.apns = apns
        self.webPush = webPush
        self.fcm = fcm
    }

    var providers: Set<PushProvider> {
        var providers: Set<PushProvider> = []
        if apns != nil { providers.insert(.apns) }
        if webPush != nil { providers.insert(.webpush) }
        if fcm != nil { providers.insert(.fcm) }
        return providers
    }

    func deliver(_ items: [OutboxItem]) throws -> [APNsResponse] {
        var responses = [APNsResponse](
            repeating: APNsResponse(status: 0, transportError: "this process does not send to that push service"),
            count: items.count)
        let apple = items.indices.filter { items[$0].provider == .apns }
        if let apns, !apple.isEmpty {
            for (index, response) in zip(apple, try apns.deliver(apple.map { items[$0] })) {
                responses[index] = response
            }
        }
        let web = items.indices.filter { items[$0].provider == .webpush }
        if let webPush, !web.isEmpty {
            for (index, response) in zip(web, webPush.deliver(web.map { items[$0] })) { responses[index] = response }
        }
        let android = items.indices.filter { items[$0].provider == .fcm }
        if let fcm, !android.isEmpty {
            for (index, response) in zip(android, fcm.deliver(android.map { items[$0] })) {
                responses[index] = response
            }
        }
        return responses
    }

    func idle() throws {
        try apns?.idle()
    }
}
