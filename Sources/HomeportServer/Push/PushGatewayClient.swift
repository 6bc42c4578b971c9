import CCurl
import Foundation
import HomeportAPNs
import HomeportLogging
import HomeportStorage
import HomeportWire

/// Sends the outbox to a push gateway instead of APNs: the device changes it has not heard of
/// first (``PushGatewaySync``), then the batch of pushes as one request, over one kept-alive
/// HTTPS connection (libcurl). The gateway answers with Apple's outcome of each push, so the
/// sender records them as it would APNs' own.
///
/// A gateway that cannot be reached, or that refuses the request as a whole (a revoked
/// credential, a gateway overloaded), makes every push of the batch a transient failure: they
/// are tried again with backoff.
final class PushGatewayClient: PushTransport, @unchecked Sendable {
    private let settings: PushGatewaySettings
    private let database: any Database
    private let logger: Logger
    /// The handle and its connection, one exchange at a time.
    private let lock = NSLock()
    private var curl: UnsafeMutableRawPointer?
    private var lastWarning: ContinuousClock.Instant?
    private let base: String

    init(database: any Database, settings: PushGatewaySettings, logger: Logger) {
        self.settings = settings
        self.database = database
        self.logger = logger
        self.base = settings.url.hasSuffix("/") ? String(settings.url.dropLast()) : settings.url
    }

    deinit {
        if let curl { curl_easy_cleanup(curl) }
    }

    func deliver(_ items: [OutboxItem]) throws -> [APNsResponse] {
        if let failure = try forwardDeviceChanges() {
            return items.map { _ in APNsResponse(status: 0, transportError: failure.description) }
        }
        let batch = GatewayPushBatch(
            pushes: items.map {
                GatewayPush(
                    apnsId: $0.apnsID, deviceToken: $0.deviceToken, environment: $0.environment, topic: $0.topic,
                    payload: $0.payload, priority: $0.priority, expiration: $0.expiration, collapseId: $0.collapseID)
            })
        switch post(PushGatewayPath.pushes, try JSONEncoder().encode(batch)) {
        case .failure(let failure):
            return items.map { _ in APNsResponse(status: 0, transportError: failure.description) }
        case .success(let body):
            guard let answer = try? JSONDecoder().decode(GatewayPushResults.self, from: body),
                answer.results.count == items.count
            else {
                let failure = "the push gateway's answer is not one outcome per push"
                lock.withLock { warn(failure, [:]) }
                return items.map { _ in APNsResponse(status: 0, transportError: failure.description) }
            }
            return answer.results.map { APNsResponse(status: $0.status, reason: $0.reason, timestamp: $0.timestamp) }
        }
    }

    func idle() throws {
        // Why it failed is logged by the exchange; the changes wait for the next pass.
        _ = try forwardDeviceChanges()
    }

    /// Logs a failed exchange, at most once a minute (the idle pass tries four times a second).
    private func warn(_ message: String, _ metadata: [String: String]) {
        let now = ContinuousClock.now
        guard lastWarning.map({ now - $0 >= .seconds(60) }) ?? true else { return }
        lastWarning = now
        logger.warning(message, metadata: metadata)
    }

    /// Sends every device change the gateway has not acknowledged; why it could not, or `nil`.
    private func forwardDeviceChanges() throws -> String? {
        while true {
            let changes = try PushGatewaySync(database).pending(limit: GatewayDeviceChanges.maximumCount)
            guard !changes.isEmpty else { return nil }
            let body = GatewayDeviceChanges(
                register: changes.filter(\.registered).map {
                    PushDeviceRegistration(token: $0.token, environment: $0.environment)
                },
                remove: changes.filter { !$0.registered }.map(\.token))
            if case .failure(let failure) = post(PushGatewayPath.devices, try JSONEncoder().encode(body)) {
                return "device registrations not forwarded: " + failure.description
            }
            try database.transaction { try PushGatewaySync($0).acknowledge(changes) }
            if changes.count < GatewayDeviceChanges.maximumCount { return nil }
        }
    }

    /// POSTs `body` as JSON to `path`; the answer's body when it is a 200, else why not.
    private func post(_ path: String, _ body: Data) -> Result<Data, GatewayFailure> {
        lock.withLock {
            if curl == nil { curl = curl_easy_init() }
            guard let curl else { return .failure(GatewayFailure("libcurl failed")) }
            let exchange = Exchange()
            var headers = curl_slist_append(nil, "Content-Type: application/json")
            headers = curl_slist_append(headers, "Authorization: Bearer \(settings.credential)")
            headers = curl_slist_append(headers, "Expect:")
            defer { curl_slist_free_all(headers) }
            _ = homeport_curl_set_string(curl, CURLOPT_URL, base + path)
            _ = homeport_curl_set_slist(curl, CURLOPT_HTTPHEADER, headers)
            _ = homeport_curl_set_long(curl, CURLOPT_POST, 1)
            _ = homeport_curl_set_long(curl, CURLOPT_TIMEOUT, settings.timeoutSeconds)
            _ = homeport_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT, min(10, settings.timeoutSeconds))
            _ = homeport_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
            _ = homeport_curl_set_long(curl, CURLOPT_FOLLOWLOCATION, 0)
            _ = homeport_curl_set_long(curl, CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS))
            if let caFile = settings.caFile { _ = homeport_curl_set_string(curl, CURLOPT_CAINFO, caFile) }
            let context = Unmanaged.passRetained(exchange)
            defer { context.release() }
            _ = homeport_curl_set_pointer(curl, CURLOPT_WRITEDATA, context.toOpaque())
            _ = homeport_curl_set_write_function(curl, gatewayWriteCallback)
            let code: CURLcode = body.withUnsafeBytes { bytes in
                _ = homeport_curl_set_long(curl, CURLOPT_POSTFIELDSIZE, bytes.count)
                _ = homeport_curl_set_pointer(
                    curl, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                return curl_easy_perform(curl)
            }
            _ = homeport_curl_set_pointer(curl, CURLOPT_POSTFIELDS, nil)
            guard code == CURLE_OK else {
                // The connection may be broken: the next exchange starts afresh.
                curl_easy_cleanup(curl)
                self.curl = nil
                let failure = GatewayFailure(
                    "the push gateway was not reached: " + String(cString: curl_easy_strerror(code)))
                warn("push gateway unreachable", ["error": failure.description])
                return .failure(failure)
            }
            let status = homeport_curl_status(curl)
            guard status == 200 else {
                let message =
                    (try? JSONDecoder().decode(ErrorEnvelope.self, from: exchange.body))?.error.message
                    ?? String(decoding: exchange.body.prefix(200), as: UTF8.self)
                let failure = GatewayFailure("the push gateway answered \(status): \(message)")
                warn("push gateway refused the request", ["status": String(status), "error": message])
                return .failure(failure)
            }
            return .success(exchange.body)
        }
    }

    /// Why an exchange with the gateway failed.
    struct GatewayFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The answer's body, as it arrives (at most 16 MiB).
    final class Exchange {
        var body = Data()
    }
}

private let gatewayWriteCallback: curl_write_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let exchange = Unmanaged<PushGatewayClient.Exchange>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    guard exchange.body.count + length <= 16 << 20 else { return 0 }
    exchange.body.append(UnsafeRawBufferPointer(start: data, count: length).bindMemory(to: UInt8.self))
    return length
}
