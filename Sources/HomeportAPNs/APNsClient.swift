import Foundation

/// The APNs provider API over HTTP/2: one multiplexed TLS connection per APNs host (nghttp2 over
/// OpenSSL), kept open between batches, every request of a batch in flight at once as its own
/// stream.
///
/// Not thread-safe: one sender thread owns a client and calls ``send(_:authorization:)``.
public final class APNsClient: @unchecked Sendable {
    /// Where the two APNs hosts are and how to reach them.
    public struct Configuration: Sendable, Hashable {
        /// Production tokens' host.
        public var productionURL: String
        /// Development (sandbox) tokens' host.
        public var sandboxURL: String
        /// A CA file trusted besides the system's (a test or mirror endpoint); `nil` for system trust only.
        public var caFile: String?
        /// Longest wait for one batch's answers (and for connecting), in seconds.
        public var timeoutSeconds: Int

        /// Apple's hosts and system trust.
        public init(
            productionURL: String = "https://api.push.apple.com",
            sandboxURL: String = "https://api.sandbox.push.apple.com", caFile: String? = nil, timeoutSeconds: Int = 30
        ) {
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.caFile = caFile
            self.timeoutSeconds = timeoutSeconds
        }
    }

    private let configuration: Configuration
    private var sessions: [String: HTTP2Session] = [:]

    /// Creates a client; no connection is made before the first request.
    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Sends every request (concurrently, as streams of one connection per host) with the
    /// provider token `authorization`, and returns the answers in the requests' order.
    public func send(_ requests: [APNsRequest], authorization: String) -> [APNsResponse] {
        var responses = [APNsResponse](
            repeating: APNsResponse(status: 0, transportError: "not sent"), count: requests.count)
        let byHost = Dictionary(grouping: requests.indices) {
            requests[$0].environment == .sandbox ? configuration.sandboxURL : configuration.productionURL
        }
        let deadline = ContinuousClock.now + .seconds(configuration.timeoutSeconds)
        for (base, indices) in byHost {
            let answers = exchange(requests, indices, base, authorization, deadline)
            for (index, answer) in zip(indices, answers) { responses[index] = answer }
        }
        return responses
    }

    /// One exchange of the requests at `indices` with `base` on its connection: each one's answer.
    private func exchange(
        _ requests: [APNsRequest], _ indices: [Int], _ base: String, _ authorization: String,
        _ deadline: ContinuousClock.Instant
    ) -> [APNsResponse] {
        do {
            let (session, authority) = try self.session(base, deadline: deadline)
            defer { if !session.isUsable { sessions[base] = nil } }
            // What every request shares is laid out once. HPACK sends the repeated fields as
            // indexes, except `authorization`, which nghttp2 never indexes (a credential).
            let shared: [HTTP2Session.Field] = [
                .init(":method", "POST"), .init(":scheme", "https"), .init(":authority", authority),
                .init("authorization", "bearer " + authorization), .init("content-type", "application/json"),
            ]
            return session.exchange(
                shared: shared, count: indices.count, body: { requests[indices[$0]].payload },
                fields: { Self.fields(of: requests[indices[$0]], into: &$1) }, deadline: deadline
            ).map(Self.response)
        } catch {
            return indices.map { _ in APNsResponse(status: 0, transportError: String(describing: error)) }
        }
    }

    /// The open session to `base`, or a new one.
    private func session(_ base: String, deadline: ContinuousClock.Instant) throws -> (HTTP2Session, String) {
        guard let url = URLComponents(string: base), url.scheme == "https", let host = url.host, !host.isEmpty else {
            throw APNsConnectionError("\(base) is not an https:// URL")
        }
        let port = url.port ?? 443
        let authority = url.port.map { "\(host):\($0)" } ?? host
        if let open = sessions[base], open.isUsable { return (open, authority) }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let tls = try TLSConnection.connect(host: bare, port: port, caFile: configuration.caFile, deadline: deadline)
        let session = try HTTP2Session(tls: tls, authority: authority)
        sessions[base] = session
        return (session, authority)
    }

    /// Lays out a request's own fields (beside the exchange's shared ones) in `block`. Its path
    /// (the device's) and its `apns-id` are new with each request of a batch, so HPACK is told not
    /// to keep them.
    static func fields(of request: APNsRequest, into block: inout HTTP2Session.FieldBlock) {
        block.append(":path", prefix: "/3/device/", request.deviceToken, indexed: false)
        block.append("apns-id", request.apnsID, indexed: false)
        block.append("apns-topic", request.topic)
        block.append("apns-push-type", request.pushType.rawValue)
        block.append("apns-priority", number: Int64(request.priority.rawValue))
        block.append("apns-expiration", number: request.expiration)
        block.append("content-length", number: Int64(request.payload.count))
        if let collapse = request.collapseID { block.append("apns-collapse-id", collapse) }
    }

    private struct Reason: Decodable {
        var reason: String?
        var timestamp: Int64?
    }

    private static func response(_ answer: HTTP2Session.Answer) -> APNsResponse {
        guard answer.failure == nil else { return APNsResponse(status: 0, transportError: answer.failure) }
        let reason = answer.body.isEmpty ? nil : try? JSONDecoder().decode(Reason.self, from: Data(answer.body))
        return APNsResponse(
            status: answer.status, reason: reason?.reason.map(APNsReason.init(rawValue:)), timestamp: reason?.timestamp)
    }
}
