import CNGHTTP2
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One HTTP/2 connection (nghttp2 over a ``TLSConnection``): requests go out as concurrent
/// streams, their frames gathered into large TLS writes. Used by one thread.
final class HTTP2Session {
    /// One request and what came back for it.
    final class Stream {
        let index: Int
        let body: Data
        var sent = 0
        var status = 0
        var response = [UInt8]()
        var done = false
        var failed: String?

        init(index: Int, body: Data) {
            self.index = index
            self.body = body
        }
    }

    /// A request's header field, and whether HPACK may keep it in the connection's table for the
    /// requests after it: not a value that is new with every request (an `apns-id`), which would
    /// only push out the fields that repeat.
    struct Field {
        var name: String
        var value: String
        var indexed: Bool

        init(_ name: String, _ value: String, indexed: Bool = true) {
            self.name = name
            self.value = value
            self.indexed = indexed
        }
    }

    /// What one exchange gave for one request.
    struct Answer {
        /// The status, or 0 without one.
        var status: Int
        /// The response body.
        var body: [UInt8]
        /// Why there was no answer.
        var failure: String?
    }

    private let tls: TLSConnection
    private let authority: String
    private var session: OpaquePointer?
    private var streams: [Int32: Stream] = [:]
    private var output = [UInt8]()
    private var written = 0
    private var input = [UInt8](repeating: 0, count: 64 << 10)
    /// False once the connection failed or the server sent GOAWAY: make a new one.
    private(set) var isUsable = true

    init(tls: TLSConnection, authority: String) throws {
        self.tls = tls
        self.authority = authority
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw APNsConnectionError("nghttp2 could not start")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks, Self.onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, Self.onData)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, Self.onClose)
        var created: OpaquePointer?
        guard nghttp2_session_client_new(&created, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0 else {
            throw APNsConnectionError("nghttp2 could not start a session")
        }
        session = created
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        _ = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
    }

    deinit {
        nghttp2_session_del(session)
    }

    /// Sends every request with the `shared` fields and its own, and waits for all answers until
    /// `deadline`; a request without an answer then gets a failure. The shared fields (the
    /// method, the authority, the authorization) are laid out once for the exchange; each
    /// request's pseudo-header fields go with the shared ones, before any other.
    ///
    /// What is submitted goes out every ``submitSlice`` requests, so that the server answers the
    /// first while the next are laid out, rather than waiting for the whole batch.
    ///
    /// There are `count` requests: `body` gives each one's body by its index, and `fields` lays
    /// out its own fields in the block it is handed (emptied before each).
    func exchange(
        shared: [Field], count: Int, body: (Int) -> Data, fields: (Int, inout FieldBlock) -> Void,
        deadline: ContinuousClock.Instant
    ) -> [Answer] {
        let all = (0..<count).map { Stream(index: $0, body: body($0)) }
        let sharedBlock = FieldBlock(shared)
        var own = FieldBlock()
        var pairs: [nghttp2_nv] = []
        sharedBlock.bytes.withUnsafeBufferPointer { sharedBytes in
            // The shared pairs point into `sharedBytes`, which stays put for the whole exchange.
            var sharedPseudo: [nghttp2_nv] = []
            var sharedOthers: [nghttp2_nv] = []
            sharedBlock.append(pseudo: true, from: sharedBytes, to: &sharedPseudo)
            sharedBlock.append(pseudo: false, from: sharedBytes, to: &sharedOthers)
            for stream in all {
                own.removeAll()
                fields(stream.index, &own)
                let id = own.bytes.withUnsafeBufferPointer { ownBytes in
                    pairs.removeAll(keepingCapacity: true)
                    pairs += sharedPseudo
                    own.append(pseudo: true, from: ownBytes, to: &pairs)
                    pairs += sharedOthers
                    own.append(pseudo: false, from: ownBytes, to: &pairs)
                    return submit(pairs, stream)
                }
                if id > 0 {
                    streams[id] = stream
                } else {
                    stream.done = true
                    stream.failed = "nghttp2 refused the request"
                }
                if stream.index % Self.submitSlice == Self.submitSlice - 1, !flush() { break }
            }
        }
        while !streams.isEmpty && isUsable && ContinuousClock.now < deadline {
            guard flush(), receive(until: deadline) else { break }
        }
        // Streams still open at the deadline, or not submitted when the connection failed, have
        // no answer.
        for stream in all where !stream.done {
            stream.failed = isUsable ? "no answer in time" : "the connection to APNs failed"
        }
        if !streams.isEmpty { isUsable = false }
        streams.removeAll()
        return all.map {
            Answer(status: $0.failed == nil ? $0.status : 0, body: $0.response, failure: $0.failed)
        }
    }

    /// Submits one request; returns its stream id (negative on failure).
    private func submit(_ pairs: [nghttp2_nv], _ stream: Stream) -> Int32 {
        var provider = nghttp2_data_provider(
            source: nghttp2_data_source(ptr: Unmanaged.passUnretained(stream).toOpaque()),
            read_callback: Self.readBody)
        // nghttp2 copies the pairs (and the bytes they point to); the stream object lives in
        // `streams` until it closes.
        return pairs.withUnsafeBufferPointer {
            nghttp2_submit_request(session, nil, $0.baseAddress, $0.count, &provider, nil)
        }
    }

    /// Serialises what nghttp2 has to send and writes it; false when the connection failed.
    /// What is serialised goes out every ``writeSize`` bytes, so that the server starts on the
    /// first requests while the last are still being laid out.
    private func flush() -> Bool {
        while true {
            var chunk: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &chunk)
            if count < 0 {
                isUsable = false
                return false
            }
            guard count > 0, let chunk else { break }
            output.append(contentsOf: UnsafeBufferPointer(start: chunk, count: count))
            if output.count - written >= Self.writeSize, !write() { return false }
        }
        return write()
    }

    /// Bytes serialised before a write is tried (a few TLS records); a socket that takes none then
    /// lets more gather, tried again with each chunk.
    static let writeSize = 64 << 10

    /// Requests submitted before what they came to is written (a few kilobytes): on loopback this
    /// took the sender from 0.72 to 0.84 of h2load's pace; a slice of 16 to 64 did as well.
    static let submitSlice = 32

    /// Writes what is serialised, as far as the socket takes it; false when the connection failed.
    private func write() -> Bool {
        while written < output.count {
            let progress = output.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[written...])) }
            switch progress {
            case .bytes(let count):
                written += count
            case .wait:
                return true
            case .closed, .failed:
                isUsable = false
                return false
            }
        }
        output.removeAll(keepingCapacity: true)
        written = 0
        return true
    }

    /// Waits for the socket (briefly), reads what there is and hands it to nghttp2; false when the
    /// connection failed or closed.
    private func receive(until deadline: ContinuousClock.Instant) -> Bool {
        if !tls.hasBufferedBytes {
            let events = Int16(POLLIN) | (written < output.count ? Int16(POLLOUT) : 0)
            guard TLSConnection.wait(tls.descriptor, events, until: min(deadline, .now + .milliseconds(100))) else {
                return true
            }
        }
        while true {
            let progress = input.withUnsafeMutableBytes { tls.read($0) }
            switch progress {
            case .bytes(let count):
                let used = input.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, count) }
                if used < 0 {
                    isUsable = false
                    return false
                }
            case .wait:
                if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
                    isUsable = false  // GOAWAY: the server will take no more streams here
                }
                return true
            case .closed, .failed:
                isUsable = false
                return false
            }
        }
    }

    private func stream(_ id: Int32) -> Stream? {
        streams[id]
    }

    fileprivate func closed(_ id: Int32, error: UInt32) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.done = true
        if error != 0 && stream.status == 0 { stream.failed = "the stream was reset (HTTP/2 error \(error))" }
    }

    private static let onHeader: nghttp2_on_header_callback = {
        _, frame, name, nameLength, value, valueLength, _, user in
        // The name first: an answer's other fields (`apns-id`, …) reach nothing of the session.
        guard let frame, let name, let value, let user, nameLength == 7, memcmp(name, ":status", 7) == 0 else {
            return 0
        }
        let session = Unmanaged<HTTP2Session>.fromOpaque(user).takeUnretainedValue()
        guard let stream = session.stream(frame.pointee.hd.stream_id) else { return 0 }
        stream.status = HTTP2Session.status(UnsafeBufferPointer(start: value, count: valueLength))
        return 0
    }

    /// A `:status` value: three digits, or 0 for anything else.
    static func status(_ value: UnsafeBufferPointer<UInt8>) -> Int {
        guard value.count == 3 else { return 0 }
        var status = 0
        for digit in value {
            guard (0x30...0x39).contains(digit) else { return 0 }
            status = status * 10 + Int(digit - 0x30)
        }
        return status
    }

    private static let onData: nghttp2_on_data_chunk_recv_callback = { _, _, id, data, length, user in
        guard let data, let user else { return 0 }
        let session = Unmanaged<HTTP2Session>.fromOpaque(user).takeUnretainedValue()
        // APNs answers with a small JSON object; more is not an APNs answer and is dropped.
        if let stream = session.stream(id), stream.response.count + length <= 64 << 10 {
            stream.response.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
        }
        return 0
    }

    private static let onClose: nghttp2_on_stream_close_callback = { _, id, error, user in
        guard let user else { return 0 }
        Unmanaged<HTTP2Session>.fromOpaque(user).takeUnretainedValue().closed(id, error: error)
        return 0
    }

    private static let readBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
        guard let buffer, let flags, let pointer = source?.pointee.ptr else { return 0 }
        let stream = Unmanaged<Stream>.fromOpaque(pointer).takeUnretainedValue()
        let count = min(length, stream.body.count - stream.sent)
        stream.body.withUnsafeBytes {
            UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress! + stream.sent, byteCount: count)
        }
        stream.sent += count
        if stream.sent == stream.body.count { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
        return count
    }
}
