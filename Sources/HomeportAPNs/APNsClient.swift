import CCurl
import Foundation

/// The APNs provider API over HTTP/2, on libcurl's multi interface: one multiplexed TLS
/// connection per APNs host, many streams in flight on it, kept open between batches.
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
        /// Longest wait for one request, in seconds.
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

    private static let initialized: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()
    private let configuration: Configuration
    private let multi: UnsafeMutableRawPointer
    private var idle: [UnsafeMutableRawPointer] = []

    /// One transfer's buffers, alive until it completes.
    private final class Transfer {
        let index: Int
        let payload: [UInt8]
        var headers: UnsafeMutablePointer<curl_slist>?
        var body = [UInt8]()

        init(index: Int, payload: [UInt8]) {
            self.index = index
            self.payload = payload
        }

        deinit { curl_slist_free_all(headers) }
    }

    /// Creates a client; no connection is made before the first request.
    public init(configuration: Configuration) {
        Self.initialized
        self.configuration = configuration
        multi = curl_multi_init()!
        _ = homeport_curlm_set_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = homeport_curlm_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1)
        _ = homeport_curlm_set_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, 1000)
    }

    deinit {
        idle.forEach { curl_easy_cleanup($0) }
        curl_multi_cleanup(multi)
    }

    /// Sends every request (concurrently, as streams of one connection per host) with the
    /// provider token `authorization`, and returns the answers in the requests' order.
    public func send(_ requests: [APNsRequest], authorization: String) -> [APNsResponse] {
        var responses = [APNsResponse?](repeating: nil, count: requests.count)
        var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
        for (index, request) in requests.enumerated() {
            let easy = idle.popLast() ?? curl_easy_init()
            guard let easy else {
                responses[index] = APNsResponse(status: 0, transportError: "libcurl could not make a transfer")
                continue
            }
            let transfer = Transfer(index: index, payload: Array(request.payload))
            configure(easy, request, transfer, authorization: authorization)
            transfers[easy] = transfer
            curl_multi_add_handle(multi, easy)
        }
        var running: Int32 = 1
        while running > 0 || !transfers.isEmpty {
            curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                    let transfer = transfers.removeValue(forKey: easy)
                else { continue }
                responses[transfer.index] = Self.response(easy, transfer, homeport_curlmsg_result(message))
                curl_multi_remove_handle(multi, easy)
                curl_easy_reset(easy)
                idle.append(easy)
            }
            if running > 0 { curl_multi_poll(multi, nil, 0, 1000, nil) }
        }
        return responses.map { $0 ?? APNsResponse(status: 0, transportError: "no answer") }
    }

    private func configure(
        _ easy: UnsafeMutableRawPointer, _ request: APNsRequest, _ transfer: Transfer, authorization: String
    ) {
        let base = request.sandbox ? configuration.sandboxURL : configuration.productionURL
        let url = base.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/3/device/" + request.deviceToken
        _ = homeport_curl_set_string(easy, CURLOPT_URL, url)
        _ = homeport_curl_set_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        _ = homeport_curl_set_long(easy, CURLOPT_PIPEWAIT, 1)
        _ = homeport_curl_set_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = homeport_curl_set_long(easy, CURLOPT_TIMEOUT, configuration.timeoutSeconds)
        // Never through a proxy from the environment: the provider token must go to Apple only.
        _ = homeport_curl_set_string(easy, CURLOPT_PROXY, "")
        if let caFile = configuration.caFile { _ = homeport_curl_set_string(easy, CURLOPT_CAINFO, caFile) }
        _ = homeport_curl_set_long(easy, CURLOPT_POST, 1)
        _ = homeport_curl_set_long(easy, CURLOPT_POSTFIELDSIZE, transfer.payload.count)
        // libcurl keeps its own copy of the body for the transfer.
        transfer.payload.withUnsafeBufferPointer {
            _ = homeport_curl_set_pointer(
                easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress))
        }
        var headers: [String] = [
            "authorization: bearer \(authorization)", "apns-id: \(request.apnsID)", "apns-topic: \(request.topic)",
            "apns-push-type: \(request.pushType)", "apns-priority: \(request.priority)",
            "apns-expiration: \(request.expiration)", "content-type: application/json", "Expect:",
        ]
        if let collapse = request.collapseID { headers.append("apns-collapse-id: \(collapse)") }
        for header in headers { transfer.headers = curl_slist_append(transfer.headers, header) }
        _ = homeport_curl_set_slist(easy, CURLOPT_HTTPHEADER, transfer.headers)
        _ = homeport_curl_set_write_function(easy, Self.collect)
        _ = homeport_curl_set_pointer(easy, CURLOPT_WRITEDATA, Unmanaged.passUnretained(transfer).toOpaque())
    }

    private static let collect: curl_write_callback = { data, size, count, context in
        guard let data, let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        // APNs answers with a small JSON object; more is not an APNs answer.
        guard transfer.body.count + length <= 64 << 10 else { return 0 }
        data.withMemoryRebound(to: UInt8.self, capacity: length) {
            transfer.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
        }
        return length
    }

    private struct Reason: Decodable {
        var reason: String?
        var timestamp: Int64?
    }

    private static func response(_ easy: UnsafeMutableRawPointer, _ transfer: Transfer, _ result: CURLcode)
        -> APNsResponse
    {
        guard result == CURLE_OK else {
            return APNsResponse(status: 0, transportError: String(cString: curl_easy_strerror(result)))
        }
        let status = homeport_curl_status(easy)
        let reason = try? JSONDecoder().decode(Reason.self, from: Data(transfer.body))
        return APNsResponse(status: status, reason: reason?.reason, timestamp: reason?.timestamp)
    }
}
