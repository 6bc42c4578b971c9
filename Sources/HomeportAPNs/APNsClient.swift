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
            let answers = exchange(indices.map { requests[$0] }, base, authorization, deadline)
            for (index, answer) in zip(indices, answers) { responses[index] = answer }
        }
        return responses
    }

    /// One exchange of `requests` with `base` on its connection: each one's answer.
    private func exchange(
        _ requests: [APNsRequest], _ base: String, _ authorization: String, _ deadline: ContinuousClock.Instant
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
            return session.exchange(shared: shared, requests.map(Self.message), deadline: deadline).map(Self.response)
        } catch {
            return requests.map { _ in APNsResponse(status: 0, transportError: String(describing: error)) }
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

    /// A request's own fields (beside the exchange's shared ones) and its body. Its path (the
    /// device's) and its `apns-id` are new with each request of a batch, so HPACK is told not to
    /// keep them.
    private static func message(_ request: APNsRequest) -> (fields: [HTTP2Session.Field], body: Data) {
        var fields: [HTTP2Session.Field] = [
            .init(":path", "/3/device/" + request.deviceToken, indexed: false),
            .init("apns-id", request.apnsID, indexed: false),
            .init("apns-topic", request.topic), .init("apns-push-type", request.pushType.rawValue),
            .init("apns-priority", String(request.priority.rawValue)),
            .init("apns-expiration", String(request.expiration)),
            .init("content-length", String(request.payload.count)),
        ]
        if let collapse = request.collapseID { fields.append(.init("apns-collapse-id", collapse)) }
        return (fields, request.payload)
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
