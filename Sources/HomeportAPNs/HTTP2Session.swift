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
        let body: [UInt8]
        var sent = 0
        var status = 0
        var response = [UInt8]()
        var done = false
        var failed: String?

        init(index: Int, body: [UInt8]) {
            self.index = index
            self.body = body
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

    /// Sends every request (headers already in order, pseudo-headers first) and waits for all
    /// answers until `deadline`; a request without an answer then gets a failure.
    func exchange(_ requests: [(headers: [(String, String)], body: [UInt8])], deadline: ContinuousClock.Instant)
        -> [Answer]
    {
        let all = requests.enumerated().map { Stream(index: $0.offset, body: $0.element.body) }
        for (stream, request) in zip(all, requests) {
            let id = submit(request.headers, stream)
            if id > 0 {
                streams[id] = stream
            } else {
                stream.done = true
                stream.failed = "nghttp2 refused the request"
            }
        }
        while !streams.isEmpty && isUsable && ContinuousClock.now < deadline {
            guard flush(), receive(until: deadline) else { break }
        }
        // Streams still open at the deadline, or when the connection failed, have no answer.
        for stream in streams.values where !stream.done {
            stream.failed = isUsable ? "no answer in time" : "the connection to APNs failed"
        }
        if !streams.isEmpty { isUsable = false }
        streams.removeAll()
        return all.map {
            Answer(status: $0.failed == nil ? $0.status : 0, body: $0.response, failure: $0.failed)
        }
    }

    /// Submits one request; returns its stream id (negative on failure).
    private func submit(_ headers: [(String, String)], _ stream: Stream) -> Int32 {
        // One buffer with every name and value, so the name–value pairs can point into it.
        var bytes = [UInt8]()
        var spans: [(name: Range<Int>, value: Range<Int>)] = []
        for (name, value) in headers {
            let nameStart = bytes.count
            bytes.append(contentsOf: name.utf8)
            let valueStart = bytes.count
            bytes.append(contentsOf: value.utf8)
            spans.append((nameStart..<valueStart, valueStart..<bytes.count))
        }
        return bytes.withUnsafeMutableBufferPointer { buffer in
            var pairs = spans.map { span in
                nghttp2_nv(
                    name: buffer.baseAddress! + span.name.lowerBound,
                    value: buffer.baseAddress! + span.value.lowerBound,
                    namelen: span.name.count, valuelen: span.value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: Unmanaged.passUnretained(stream).toOpaque()),
                read_callback: Self.readBody)
            // nghttp2 copies the pairs; the stream object lives in `streams` until it closes.
            return nghttp2_submit_request(session, nil, &pairs, pairs.count, &provider, nil)
        }
    }

    /// Serialises what nghttp2 has to send and writes it; false when the connection failed.
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
        }
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
        guard let frame, let name, let value, let user else { return 0 }
        let session = Unmanaged<HTTP2Session>.fromOpaque(user).takeUnretainedValue()
        guard nameLength == 7, memcmp(name, ":status", 7) == 0,
            let stream = session.stream(frame.pointee.hd.stream_id)
        else { return 0 }
        stream.status = Int(String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)) ?? 0
        return 0
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
        stream.body.withUnsafeBufferPointer {
            buffer.update(from: $0.baseAddress! + stream.sent, count: count)
        }
        stream.sent += count
        if stream.sent == stream.body.count { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
        return count
    }
}
