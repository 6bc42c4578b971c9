import CMicroHTTPD
import Foundation
import HomeportLogging

/// What one request accumulates across libmicrohttpd's several calls to the access handler.
final class RequestContext {
    let started = ContinuousClock.now
    var body = Data()
    /// The body is over the limit: it is dropped as it arrives and the answer is 413.
    var rejected = false
    /// Bytes of an oversized body read and dropped so far.
    var discarded = 0
    /// A response was queued early; later calls only let libmicrohttpd finish.
    var answered = false
    private var clientAddress: String?

    /// The peer's address as text, looked up once.
    func client(_ connection: OpaquePointer) -> String {
        if let clientAddress { return clientAddress }
        let text = addressText(homeport_mhd_client_address(connection))
        clientAddress = text
        return text
    }
}

/// Called by libmicrohttpd: once when the headers are in, once per body chunk, once at the end.
let accessHandlerCallback: MHD_AccessHandlerCallback = {
    context, connection, url, method, _, uploadData, uploadDataSize, requestContext in
    guard let context, let connection, let requestContext, let uploadDataSize else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    return server.handle(
        connection: connection, url: url, method: method, uploadData: uploadData,
        uploadDataSize: uploadDataSize, requestContext: requestContext)
}

/// Called by libmicrohttpd when a request is finished (answered, or the connection failed).
let requestCompletedCallback: MHD_RequestCompletedCallback = { context, _, requestContext, _ in
    guard let context, let requestContext, let raw = requestContext.pointee else { return }
    Unmanaged<RequestContext>.fromOpaque(raw).release()
    requestContext.pointee = nil
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    server.inFlight.subtract(1, ordering: .relaxed)
}

extension HTTPServer {
    func handle(
        connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?, uploadDataSize: UnsafeMutablePointer<Int>,
        requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = requestContext.pointee else {
            // First call: the headers are in. An oversized body is refused; a modest excess is read
            // and dropped first, so the client (which may still be sending) reliably gets the 413
            // instead of a connection reset. A huge announced body is refused before reading.
            let request = RequestContext()
            requestContext.pointee = Unmanaged.passRetained(request).toOpaque()
            inFlight.add(1, ordering: .relaxed)
            if let length = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
                let announced = Int(String(cString: length)), announced > configuration.maxBodyBytes
            {
                request.rejected = true
                if announced > drainLimit { return reject(connection, request, url: url, method: method) }
            }
            return .YES
        }
        let request = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        if uploadDataSize.pointee > 0 {
            let size = uploadDataSize.pointee
            uploadDataSize.pointee = 0
            if request.answered { return .YES }
            if !request.rejected && request.body.count + size > configuration.maxBodyBytes {
                request.rejected = true
                request.discarded = request.body.count
                request.body = Data()
            }
            if request.rejected {
                request.discarded += size
                if request.discarded > drainLimit { return reject(connection, request, url: url, method: method) }
                return .YES
            }
            if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                    request.body.append($0, count: size)
                }
            }
            return .YES
        }
        if request.answered { return .YES }
        if request.rejected { return reject(connection, request, url: url, method: method) }
        let httpRequest = HTTPRequest(
            method: HTTPMethod(rawValue: method.map { String(cString: $0) } ?? ""),
            path: url.map { String(cString: $0) } ?? "/",
            query: Self.values(connection, kind: .GET_ARGUMENT_KIND).reduce(into: [:]) {
                $0[$1.name] = $1.value
            },
            headers: HTTPHeaders(Self.values(connection, kind: .HEADER_KIND)),
            body: request.body,
            remoteAddress: request.client(connection))
        let answer = router.respond(to: httpRequest)
        if let failure = answer.failure {
            logger.error(
                "handler failed", metadata: ["path": answer.loggedPath, "error": String(describing: failure)])
        }
        return send(
            answer.response, on: connection, request, method: httpRequest.method.rawValue, path: answer.loggedPath)
    }

    /// How much of an oversized body is read and dropped before answering mid-upload.
    private var drainLimit: Int { configuration.maxBodyBytes + max(configuration.maxBodyBytes, 1 << 20) }

    private func reject(
        _ connection: OpaquePointer, _ request: RequestContext, url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?
    ) -> MHD_Result {
        request.answered = true
        var response = HTTPError.payloadTooLarge(limit: configuration.maxBodyBytes).response
        response.headers.set("Connection", "close")
        return send(
            response, on: connection, request, method: method.map { String(cString: $0) } ?? "",
            path: router.loggedPath(url.map { String(cString: $0) } ?? "/"))
    }

    private func send(
        _ response: HTTPResponse, on connection: OpaquePointer, _ request: RequestContext, method: String,
        path: String
    ) -> MHD_Result {
        let mhdResponse = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for field in response.headers {
            _ = MHD_add_response_header(mhdResponse, field.name, field.value)
        }
        if draining.load(ordering: .relaxed) && !response.headers.contains("Connection") {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        let result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        logAccess(
            method: method, path: path, status: response.status, bytes: response.body.count,
            elapsed: ContinuousClock.now - request.started, client: request.client(connection))
        return result
    }

    private final class ValueCollector {
        var values: [(name: String, value: String)] = []
    }

    private static func values(_ connection: OpaquePointer, kind: MHD_ValueKind) -> [(name: String, value: String)] {
        let collector = ValueCollector()
        let pointer = Unmanaged.passUnretained(collector).toOpaque()
        _ = MHD_get_connection_values_n(connection, kind, valueIterator, pointer)
        return collector.values
    }

    private static let valueIterator: MHD_KeyValueIteratorN = { context, _, key, keySize, value, valueSize in
        guard let context, let key else { return .YES }
        let collector = Unmanaged<ValueCollector>.fromOpaque(context).takeUnretainedValue()
        let name = String(decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
        let text =
            value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
        collector.values.append((name: name, value: text))
        return .YES
    }
}
