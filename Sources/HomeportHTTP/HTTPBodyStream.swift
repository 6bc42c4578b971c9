import CMicroHTTPD
import Foundation

/// A response body written over time (server-sent events), without a thread held per response.
///
/// Anything may ``write(_:)`` from any thread. libmicrohttpd asks for bytes when the socket can
/// take them; with nothing to send, the connection is suspended (taken out of the event loop, no
/// thread and no timeout) until the next write resumes it. ``finish()`` ends the response once
/// what was written has gone; ``onClose`` hears when the connection is gone for any reason.
package final class HTTPBodyStream: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer: [UInt8] = []
    private var sent = 0
    private var finished = false
    private var closed = false
    private var suspended = false
    private var connection: OpaquePointer?
    private var closeHandler: (@Sendable () -> Void)?
    /// The server's own note of the stream's end (it keeps live streams to end them at shutdown).
    var serverCloseHandler: (@Sendable () -> Void)?
    /// Bytes waiting beyond this mean the client does not read: the stream is ended.
    package let maximumBuffered: Int

    /// Creates a stream; a client that lets more than `maximumBuffered` bytes pile up is cut off.
    package init(maximumBuffered: Int = 1 << 20) {
        self.maximumBuffered = maximumBuffered
    }

    /// Called once, on some thread, when the connection is gone (finished, or the client left).
    package var onClose: (@Sendable () -> Void)? {
        get { lock.withLock { closeHandler } }
        set {
            let callNow: Bool = lock.withLock {
                closeHandler = newValue
                return closed
            }
            if callNow { newValue?() }
        }
    }

    /// Whether the connection is gone.
    package var isClosed: Bool { lock.withLock { closed } }

    /// Appends bytes to send; false when the stream is finished or closed (nothing was added).
    @discardableResult
    package func write(_ bytes: [UInt8]) -> Bool {
        let (accepted, resume): (Bool, OpaquePointer?) = lock.withLock {
            guard !finished, !closed else { return (false, nil) }
            buffer.append(contentsOf: bytes)
            if buffer.count - sent > maximumBuffered { finished = true }
            return (true, takeSuspended())
        }
        if let resume { MHD_resume_connection(resume) }
        return accepted
    }

    /// Ends the response after what was written.
    package func finish() {
        let resume: OpaquePointer? = lock.withLock {
            guard !finished else { return nil }
            finished = true
            return takeSuspended()
        }
        if let resume { MHD_resume_connection(resume) }
    }

    /// The connection to resume, if the reader suspended it (and clears the mark). Under the lock.
    private func takeSuspended() -> OpaquePointer? {
        guard suspended else { return nil }
        suspended = false
        return connection
    }

    // MARK: Called by the server

    /// The connection the stream answers; set when the response is queued.
    func attach(_ connection: OpaquePointer) {
        lock.withLock { self.connection = connection }
    }

    /// libmicrohttpd wants up to `capacity` bytes: copies them, or suspends the connection (and
    /// answers 0) when there is nothing yet, or ends the response.
    func read(into destination: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        lock.withLock {
            let available = buffer.count - sent
            if available > 0 {
                let count = min(available, capacity)
                buffer.withUnsafeBufferPointer { source in
                    UnsafeMutableRawPointer(destination).copyMemory(from: source.baseAddress! + sent, byteCount: count)
                }
                sent += count
                if sent == buffer.count {
                    buffer.removeAll(keepingCapacity: true)
                    sent = 0
                }
                return count
            }
            if finished { return Int(MHD_CONTENT_READER_END_OF_STREAM) }
            guard let connection else { return Int(MHD_CONTENT_READER_END_WITH_ERROR) }
            // Suspended while the lock is held: a writer can only resume it after this returns.
            suspended = true
            MHD_suspend_connection(connection)
            return 0
        }
    }

    /// The response is gone (libmicrohttpd freed it): nothing is sent or resumed any more.
    func closedByServer() {
        let handlers: [@Sendable () -> Void] = lock.withLock {
            closed = true
            finished = true
            suspended = false
            connection = nil
            buffer = []
            defer {
                closeHandler = nil
                serverCloseHandler = nil
            }
            return [serverCloseHandler, closeHandler].compactMap { $0 }
        }
        handlers.forEach { $0() }
    }
}

/// libmicrohttpd's content reader for an ``HTTPBodyStream``.
let bodyStreamReader: MHD_ContentReaderCallback = { context, _, destination, capacity in
    guard let context, let destination else { return Int(MHD_CONTENT_READER_END_WITH_ERROR) }
    return Unmanaged<HTTPBodyStream>.fromOpaque(context).takeUnretainedValue().read(
        into: destination, capacity: capacity)
}

/// Called when libmicrohttpd destroys a streamed response: the stream's connection is gone.
let bodyStreamFreed: MHD_ContentReaderFreeCallback = { context in
    guard let context else { return }
    let stream = Unmanaged<HTTPBodyStream>.fromOpaque(context).takeRetainedValue()
    stream.closedByServer()
}
