import CMicroHTTPD
import Foundation
import HomeportLogging
import HomeportWire

/// What one request accumulates across libmicrohttpd's several calls to the access handler.
final class RequestState {
    let started = ContinuousClock.now
    let connection: ConnectionRegistry.Connection?
    /// The query, taken out of the target before libmicrohttpd parsed it.
    let target: RequestTarget
    /// The access handler has seen the headers (and counted the request in flight).
    var headersSeen = false
    /// The header fields, read once when the headers are in.
    var headers: [(name: String, value: String)] = []
    var body = Data()
    /// Body memory reserved in the registry's budget for this request.
    var reserved = 0
    /// The answer decided before the body is in (413 over the limit, 503 over the memory budget):
    /// the body is then dropped as it arrives, so the client, which may still be sending, gets the
    /// answer instead of a reset.
    var refusal: HTTPError?
    /// Bytes of a refused body read and dropped so far.
    var discarded = 0
    /// How much of a refused body is read and dropped before answering mid-upload, when less
    /// than the server's usual (a refusal from the head alone reads little of a stranger's body).
    var drainAtMost: Int?
    /// A response was queued early; later calls only let libmicrohttpd finish.
    var answered = false
    /// The handler runs on the pool, the connection suspended meanwhile.
    var offloaded: OffloadedRequest?
    private var clientAddress: String?
    /// The client's address as a trusted proxy reported it, when the peer is one.
    var forwardedClient: String?

    init(connection: ConnectionRegistry.Connection?, target: RequestTarget) {
        self.connection = connection
        self.target = target
    }

    /// The peer's address as text, looked up once per connection.
    func client(_ connection: OpaquePointer) -> String {
        if let forwardedClient { return forwardedClient }
        if let client = self.connection?.client { return client }
        if let clientAddress { return clientAddress }
        let text = addressText(homeport_mhd_client_address(connection))
        clientAddress = text
        return text
    }
}

/// Called by libmicrohttpd for each new connection, before any byte is read.
let acceptPolicyCallback: MHD_AcceptPolicyCallback = { context, address, _ in
    guard let context else { return .YES }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    guard let key = ConnectionRegistry.key(address) else { return .YES }
    return server.connections.admits(key) ? .YES : .NO
}

/// Called by libmicrohttpd with each request's target, before it parses the query: the query is
/// taken out here (see ``RequestTarget``), and the request's state starts.
let uriLogCallback:
    @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) ->
        UnsafeMutableRawPointer? = { _, uri, connection in
            // The target lies in libmicrohttpd's read buffer, which it has just cut up in place.
            let target = uri.map { RequestTarget.take(from: UnsafeMutablePointer(mutating: $0)) } ?? RequestTarget()
            let entry = connection.flatMap(HTTPServer.registryEntry)
            return Unmanaged.passRetained(RequestState(connection: entry, target: target)).toOpaque()
        }

/// Called by libmicrohttpd when a connection starts and when it ends (before its socket closes).
let notifyConnectionCallback: MHD_NotifyConnectionCallback = { context, connection, socketContext, code in
    guard let context, let connection, let socketContext else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    switch code {
    case .CONNECTION_NOTIFY_STARTED:
        let peer = homeport_mhd_client_address(connection)
        let key = ConnectionRegistry.key(peer) ?? ConnectionRegistry.AddressKey(family: 0, bits: 0)
        let entry = server.connections.opened(
            descriptor: homeport_mhd_connection_fd(connection), address: key, client: addressText(peer))
        socketContext.pointee = Unmanaged.passRetained(entry).toOpaque()
        // While the server drains, the only connections that start are those it adopted.
        if server.draining.load(ordering: .relaxed), server.adoptions.load(ordering: .relaxed) > 0 {
            server.adoptions.subtract(1, ordering: .relaxed)
        }
    case .CONNECTION_NOTIFY_CLOSED:
        guard let raw = socketContext.pointee else { return }
        let entry = Unmanaged<ConnectionRegistry.Connection>.fromOpaque(raw).takeRetainedValue()
        socketContext.pointee = nil
        server.connections.closed(entry)
    default:
        return
    }
}

/// Called by libmicrohttpd: once when the headers are in, once per body chunk, once at the end.
let accessHandlerCallback: MHD_AccessHandlerCallback = {
    context, connection, url, method, version, uploadData, uploadDataSize, requestContext in
    guard let context, let connection, let requestContext, let uploadDataSize else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    return server.handle(
        connection: connection, url: url, method: method, version: version, uploadData: uploadData,
        uploadDataSize: uploadDataSize, requestContext: requestContext)
}

/// Called by libmicrohttpd when a request is finished (answered, or the connection failed).
let requestCompletedCallback: MHD_RequestCompletedCallback = { context, _, requestContext, _ in
    guard let context, let requestContext, let raw = requestContext.pointee else { return }
    let request = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
    requestContext.pointee = nil
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    server.connections.releaseBody(request.reserved, from: request.connection?.address)
    // The connection may carry another request: its header deadline starts now.
    if let connection = request.connection { server.connections.enter(.awaitingHead, connection) }
    if request.headersSeen { server.inFlight.subtract(1, ordering: .relaxed) }
}

extension HTTPServer {
    func handle(
        connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?, uploadData: UnsafePointer<CChar>?, uploadDataSize: UnsafeMutablePointer<Int>,
        requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = requestContext.pointee else {
            // Every request's state starts in the URI callback; this is only a fallback.
            let request = RequestState(
                connection: Self.registryEntry(connection), target: RequestTarget())
            requestContext.pointee = Unmanaged.passRetained(request).toOpaque()
            return headersArrived(connection, request, url: url, method: method, version: version)
        }
        let request = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
        guard request.headersSeen else {
            return headersArrived(connection, request, url: url, method: method, version: version)
        }
        if uploadDataSize.pointee > 0 {
            let size = uploadDataSize.pointee
            uploadDataSize.pointee = 0
            request.connection?.bodyBytes.add(size, ordering: .relaxed)
            if request.answered { return .YES }
            if request.refusal == nil {
                if request.body.count + size > configuration.maxBodyBytes {
                    request.refusal = .payloadTooLarge(limit: configuration.maxBodyBytes)
                } else if request.body.count + size > request.reserved {
                    // Memory is reserved as the body arrives, never on announcement.
                    let needed = request.body.count + size - request.reserved
                    if connections.reserveBody(
                        needed, from: request.connection?.address, bodySize: request.body.count + size)
                    {
                        request.reserved += needed
                    } else {
                        request.refusal = Self.bodyBudgetSpent
                    }
                }
                if request.refusal != nil {
                    request.discarded = request.body.count
                    request.body = Data()
                }
            }
            if let refusal = request.refusal {
                request.discarded += size
                if request.discarded > (request.drainAtMost ?? drainLimit) {
                    return refuse(connection, request, refusal, url: url, method: method)
                }
                return .YES
            }
            if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                    request.body.append($0, count: size)
                }
            }
            return .YES
        }
        let methodName = method.map { String(cString: $0) } ?? ""
        if request.offloaded != nil { return answerOffloaded(request, connection, method: methodName) }
        if request.answered { return .YES }
        if let refusal = request.refusal { return refuse(connection, request, refusal, url: url, method: method) }
        if let entry = request.connection { connections.enter(.answering, entry) }
        let httpRequest = HTTPRequest(
            method: HTTPMethod(rawValue: methodName),
            path: url.map { String(cString: $0) } ?? "/",
            query: request.target.rawQuery.map(RequestTarget.arguments) ?? [:],
            headers: HTTPHeaders(request.headers),
            body: request.body,
            remoteAddress: request.client(connection))
        let answer = responder.respond(to: httpRequest)
        if let work = answer.deferred {
            return offload(work, request, on: connection, method: methodName, loggedPath: answer.loggedPath)
        }
        if let failure = answer.failure {
            logger.error(
                "handler failed", metadata: ["path": answer.loggedPath, "error": String(describing: failure)])
        }
        return send(
            answer.response, on: connection, request, method: httpRequest.method.rawValue, path: answer.loggedPath)
    }

    /// The first call: the request line and headers are in, no byte of the body has been read.
    ///
    /// Framing that is ambiguous or unsupported is refused here (RFC 9112 §6.3), with the
    /// connection closed. A body announced over the limit is refused (413): a modest one is read
    /// and dropped first, so the client, which may still be sending, reliably gets the answer
    /// instead of a reset; a huge one is refused before a byte of it is read. A body's memory is
    /// reserved in the budget as it arrives (503 past it, answered the same way).
    private func headersArrived(
        _ connection: OpaquePointer, _ request: RequestState, url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?
    ) -> MHD_Result {
        request.headersSeen = true
        inFlight.add(1, ordering: .relaxed)
        if let entry = request.connection { connections.enter(.readingBody, entry) }
        request.headers = Self.values(connection, kind: .HEADER_KIND)
        if configuration.trustedProxies.isActive {
            request.forwardedClient = configuration.trustedProxies.clientAddress(
                peer: request.client(connection), headers: request.headers)
        }
        if request.target.hasNUL {
            return refuse(
                connection, request, .badRequest(message: "The request target holds a NUL byte."), url: url,
                method: method)
        }
        // libmicrohttpd's memory per connection is larger than the header limit (it parses every
        // cookie into a table of its own, and builds the answer's head there too): the limit
        // itself is kept here.
        let targetBytes = (url.map { strlen($0) } ?? 0) + (request.target.rawQuery?.count ?? 0)
        if targetBytes > configuration.maxHeaderBytes {
            return refuse(
                connection, request,
                HTTPError(
                    status: 414, code: "uri_too_long",
                    message: "The request target is longer than the \(configuration.maxHeaderBytes)-byte limit."),
                url: url, method: method)
        }
        if request.headers.reduce(0, { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 })
            > configuration.maxHeaderBytes
        {
            return refuse(
                connection, request,
                HTTPError(
                    status: 431, code: "request_header_fields_too_large",
                    message:
                        "The request's header fields are larger than the \(configuration.maxHeaderBytes)-byte limit."),
                url: url, method: method)
        }
        let framing: Framing
        switch Framing.of(request.headers, http10: version.map { strcmp($0, MHD_HTTP_VERSION_1_0) == 0 } ?? false) {
        case .success(let value): framing = value
        case .failure(let error): return refuse(connection, request, error, url: url, method: method)
        }
        if case .length(let announced) = framing {
            if announced > configuration.maxBodyBytes {
                request.refusal = .payloadTooLarge(limit: configuration.maxBodyBytes)
            } else if announced > 0 {
                // Announcing a length costs the client nothing, so it reserves nothing either:
                // memory is reserved, and allocated, as the body arrives.
                request.body.reserveCapacity(min(announced, Self.preallocation))
            }
            // A body too large to be worth reading is refused before a byte of it is read.
            if let refusal = request.refusal, announced > drainLimit {
                return refuse(connection, request, refusal, url: url, method: method)
            }
        }
        // An answer the head alone decides (a credential that opens nothing): little of the body
        // is read, none of it kept.
        if request.refusal == nil, responder.checksHeads,
            let refusal = responder.checkHead(
                HTTPRequest(
                    method: HTTPMethod(rawValue: method.map { String(cString: $0) } ?? ""),
                    path: url.map { String(cString: $0) } ?? "/",
                    query: request.target.rawQuery.map(RequestTarget.arguments) ?? [:],
                    headers: HTTPHeaders(request.headers), remoteAddress: request.client(connection)))
        {
            request.refusal = refusal
            request.drainAtMost = Self.headRefusalDrain
            if case .length(let announced) = framing, announced > Self.headRefusalDrain {
                return refuse(connection, request, refusal, url: url, method: method)
            }
        }
        return .YES
    }

    /// How much of a body refused from the head alone is read and dropped, so that a client
    /// still sending a small one gets the answer rather than a reset.
    static let headRefusalDrain = 64 << 10

    /// What an announced body gets allocated before it arrives: a small body at once, a large
    /// one only as it comes.
    static let preallocation = 16 << 10

    static let bodyBudgetSpent = HTTPError.unavailable(
        code: APIErrorCode.unavailable,
        message: "The server is holding too many request bodies right now. Try again shortly.")

    /// How much of a refused body is read and dropped before answering mid-upload.
    private var drainLimit: Int { configuration.maxBodyBytes + max(configuration.maxBodyBytes, 1 << 20) }

    /// Answers `error` before the request is complete, and closes the connection after it.
    private func refuse(
        _ connection: OpaquePointer, _ request: RequestState, _ error: HTTPError, url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?
    ) -> MHD_Result {
        request.answered = true
        if let entry = request.connection { connections.enter(.answering, entry) }
        var response = error.response
        response.headers.set("Connection", "close")
        return send(
            response, on: connection, request, method: method.map { String(cString: $0) } ?? "",
            path: responder.loggedPath(url.map { String(cString: $0) } ?? "/"))
    }

    func send(
        _ response: HTTPResponse, on connection: OpaquePointer, _ request: RequestState, method: String,
        path: String
    ) -> MHD_Result {
        let result: MHD_Result
        if let prepared = response.prepared, !draining.load(ordering: .relaxed),
            let copy = prepared.copy(for: response, strictTransport: configuration.tls != nil)
        {
            // The preparation owns the copy: it lives until the copy is queued (and counted).
            result = withExtendedLifetime(prepared) { MHD_queue_response(connection, UInt32(response.status), copy) }
        } else {
            guard let mhdResponse = libraryResponse(response, on: connection, request) else { return .NO }
            result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
            MHD_destroy_response(mhdResponse)
        }
        logAccess(
            method: method, path: path, status: response.status, bytes: response.body.count,
            elapsed: ContinuousClock.now - request.started, client: request.client(connection))
        return result
    }

    /// libmicrohttpd's form of `response`, built for this request.
    private func libraryResponse(
        _ response: HTTPResponse, on connection: OpaquePointer, _ request: RequestState
    ) -> OpaquePointer? {
        let closing = draining.load(ordering: .relaxed)
        let strictTransport = configuration.tls != nil
        guard let stream = response.stream else {
            return response.libraryBuffer(strictTransport: strictTransport, closing: closing)
        }
        guard
            let made = MHD_create_response_from_callback(
                UInt64.max, 4096, bodyStreamReader, Unmanaged.passRetained(stream).toOpaque(), bodyStreamFreed)
        else { return nil }
        track(stream, on: connection)
        if let entry = request.connection { connections.streaming(stream, on: entry) }
        response.addLibraryFields(to: made, strictTransport: strictTransport, closing: closing)
        return made
    }

    /// Remembers a streamed response until its connection is gone.
    private func track(_ stream: HTTPBodyStream, on connection: OpaquePointer) {
        let key = ObjectIdentifier(stream)
        stream.serverCloseHandler = { [weak self] in _ = self?.liveStreams.withLock { $0.removeValue(forKey: key) } }
        liveStreams.withLock { $0[key] = stream }
        stream.attach(connection)
        if draining.load(ordering: .relaxed) { stream.finish() }
    }

    /// The registry's entry for a connection (what the notify-connection callback stored).
    static func registryEntry(_ connection: OpaquePointer) -> ConnectionRegistry.Connection? {
        homeport_mhd_socket_context(connection).map {
            Unmanaged<ConnectionRegistry.Connection>.fromOpaque($0).takeUnretainedValue()
        }
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
