import Foundation

/// An answer whose body arrives as the server sends it (server-sent events): the status and
/// header fields first, then the body in chunks until the server ends it, the connection drops,
/// or the reader cancels.
///
/// Redirects come back as they are (a 3xx with `Location`), never followed. The reader sets its
/// own rules for the body (a byte limit per event, an idle timeout, a lifetime); the transport
/// holds at most the request's `byteLimit` of unread body at a time.
public final class ClientStream: Sendable {
    /// The status.
    public let status: Int
    /// Header fields, names lowercased; a field sent twice holds both values joined with `", "`.
    public let headers: [String: String]
    let channel: ChunkChannel

    init(status: Int, headers: [String: String], channel: ChunkChannel) {
        self.status = status
        self.headers = headers
        self.channel = channel
    }

    /// A stream over an answer that is already whole (what a transport that cannot stream gives).
    public convenience init(response: ClientResponse) {
        let channel = ChunkChannel(limit: max(1, response.body.count))
        if !response.body.isEmpty { _ = channel.offer(response.body) }
        channel.finish(nil)
        self.init(status: response.status, headers: response.headers, channel: channel)
    }

    /// The next chunk of the body; `nil` once the server ended it. Throws when the connection
    /// failed (``ClientError/unreachable(address:reason:)``), or when the calling task is
    /// cancelled (which also ends the stream).
    public func next() async throws -> Data? {
        try await channel.next()
    }

    /// Ends the stream: the transfer is aborted and nothing more is read.
    public func cancel() {
        channel.cancel()
    }

    /// Reads the rest of the body, up to `limit` bytes (more is ``ClientError/tooLarge(address:limit:)``),
    /// then ends the stream. For an answer that is not the stream (an error, a page).
    func readAll(limit: Int, address: String) async throws -> Data {
        defer { cancel() }
        var body = Data()
        while let chunk = try await next() {
            guard body.count + chunk.count <= limit else { throw ClientError.tooLarge(address: address, limit: limit) }
            body.append(chunk)
        }
        return body
    }
}

/// The hand-over between a transport's reading thread (or delegate) and the reader of a
/// ``ClientStream``. The producer either waits while more than `limit` bytes are unread
/// (``push(_:)``, from a thread of its own) or fails the stream (``offer(_:)``, from a delegate
/// queue that must not block).
final class ChunkChannel: @unchecked Sendable {
    private let condition = NSCondition()
    private let limit: Int
    private var chunks: [Data] = []
    private var buffered = 0
    private var ending: Result<Void, any Error>?
    private var cancelled = false
    private var waiter: CheckedContinuation<Data?, any Error>?
    private var onCancel: (@Sendable () -> Void)?

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Whether the reader cancelled.
    var isCancelled: Bool { condition.withLock { cancelled } }

    /// Runs `action` when the reader cancels (at once if it already did).
    func whenCancelled(_ action: @escaping @Sendable () -> Void) {
        let now: Bool = condition.withLock {
            if cancelled { return true }
            onCancel = action
            return false
        }
        if now { action() }
    }

    /// Hands `data` over, waiting while more than the limit is unread. False once the reader cancelled.
    func push(_ data: Data) -> Bool {
        condition.lock()
        while buffered >= limit && !cancelled && waiter == nil { condition.wait() }
        return handOver(data)
    }

    /// Hands `data` over without waiting; false (and nothing kept) when the reader cancelled or
    /// more than the limit would be unread.
    func offer(_ data: Data) -> Bool {
        condition.lock()
        guard buffered + data.count <= limit || waiter != nil else {
            condition.unlock()
            return false
        }
        return handOver(data)
    }

    /// With the lock held: gives `data` to a waiting reader, or keeps it; unlocks.
    private func handOver(_ data: Data) -> Bool {
        guard !cancelled, ending == nil else {
            condition.unlock()
            return false
        }
        if let waiter {
            self.waiter = nil
            condition.unlock()
            waiter.resume(returning: data)
            return true
        }
        chunks.append(data)
        buffered += data.count
        condition.unlock()
        return true
    }

    /// The body ended: cleanly (`nil`) or with `error`. Chunks already handed over are still read.
    func finish(_ error: (any Error)?) {
        let waiter: CheckedContinuation<Data?, any Error>? = condition.withLock {
            guard ending == nil else { return nil }
            ending = error.map { .failure($0) } ?? .success(())
            guard chunks.isEmpty else { return nil }
            defer { self.waiter = nil }
            return self.waiter
        }
        guard let waiter else { return }
        if let error { waiter.resume(throwing: error) } else { waiter.resume(returning: nil) }
    }

    /// The reader gives up: the producer stops, a waiting read ends with `CancellationError`.
    func cancel() {
        let (waiter, action): (CheckedContinuation<Data?, any Error>?, (@Sendable () -> Void)?) = condition.withLock {
            guard !cancelled else { return (nil, nil) }
            cancelled = true
            chunks.removeAll()
            buffered = 0
            condition.broadcast()
            defer {
                self.waiter = nil
                onCancel = nil
            }
            return (self.waiter, onCancel)
        }
        waiter?.resume(throwing: CancellationError())
        action?()
    }

    /// The next chunk, `nil` at a clean end.
    func next() async throws -> Data? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data?, any Error>) in
                condition.lock()
                if cancelled {
                    condition.unlock()
                    continuation.resume(throwing: CancellationError())
                } else if !chunks.isEmpty {
                    let chunk = chunks.removeFirst()
                    buffered -= chunk.count
                    condition.broadcast()
                    condition.unlock()
                    continuation.resume(returning: chunk)
                } else if let ending {
                    condition.unlock()
                    continuation.resume(with: ending.map { nil })
                } else {
                    waiter = continuation
                    // A producer waiting on a full buffer may hand over straight to this reader.
                    condition.broadcast()
                    condition.unlock()
                }
            }
        } onCancel: {
            cancel()
        }
    }
}
