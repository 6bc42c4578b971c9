import Foundation
import HomeportAPNs
import HomeportWire

/// Where the sender hands its pushes: APNs itself (``APNsDelivery``, with this server's key) or
/// a push gateway that holds the key (``PushGatewayClient``). Either answers with Apple's outcome
/// of each push, in order, so the sender records them the same way.
protocol PushTransport: AnyObject, Sendable {
    /// Sends `items` and returns one answer per item, in order.
    func deliver(_ items: [OutboxItem]) throws -> [APNsResponse]
    /// Work between batches, when nothing is due (a gateway hears of device changes at once,
    /// not only with the next push).
    func idle() throws
    /// The push services it sends to: the sender claims only their rows.
    var providers: Set<PushProvider> { get }
    /// How many batches the sender may have out at once (`deliver` is then called from that
    /// many threads): more than one when a batch's round trip, not the sender's own work, sets
    /// the pace.
    var batchesInFlight: Int { get }
    /// The most pushes the sender claims and hands over as one batch.
    var batchSize: Int { get }
}

extension PushTransport {
    func idle() throws {}
    var providers: Set<PushProvider> { [.apns] }
    var batchesInFlight: Int { 1 }
    var batchSize: Int { 500 }
}

extension APNsRequest {
    /// The requests for a batch of outbox rows. One notification fans out as the same payload to
    /// each device, so a payload written with the same bytes as the row before's shares that
    /// row's bytes rather than being copied again (an allocation and a copy a push). The same
    /// bytes, not `==`: two spellings Unicode counts as one (a precomposed `Å` and U+212B) are
    /// sent each as its row holds it.
    static func batch(_ items: [OutboxItem]) -> [APNsRequest] {
        var requests: [APNsRequest] = []
        requests.reserveCapacity(items.count)
        var last: (text: String, bytes: Data)?
        for item in items {
            let bytes: Data
            if let last, JSONText.sameBytes(last.text, item.payload) {
                bytes = last.bytes
            } else {
                bytes = Data(item.payload.utf8)
                last = (item.payload, bytes)
            }
            requests.append(APNsRequest(item, payload: bytes))
        }
        return requests
    }

    /// The request for one outbox row, whose payload is `payload` (the row's, as bytes).
    init(_ item: OutboxItem, payload: Data) {
        self.init(
            apnsID: item.apnsID, deviceToken: item.deviceToken, topic: item.topic, payload: payload,
            // The outbox holds 10 or 5 (PushCenter writes 10).
            priority: APNsPriority(rawValue: item.priority) ?? .immediate, expiration: item.expiration,
            collapseID: item.collapseID, environment: item.environment == .sandbox ? .sandbox : .production)
    }
}
