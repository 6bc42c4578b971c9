import CMicroHTTPD
import Foundation
import HomeportWire

/// A request whose handler runs on the server's ``WorkPool`` while its connection is suspended.
///
/// Exactly one party resumes the connection: the job, with its answer; the queue, with a 503,
/// when a client holding fewer places displaces it; or a server that stops before the job is
/// done, with a 503. Each resumes under the lock, so once ``abandon(with:)`` has returned, no
/// resume of this connection is under way.
final class OffloadedRequest: @unchecked Sendable {
    private let lock = NSLock()
    /// The suspended connection; `nil` once resumed.
    private var connection: OpaquePointer?
    private var answer: HTTPAnswer?

    init(suspended connection: OpaquePointer) {
        self.connection = connection
    }

    /// Stores the answer and resumes the connection; false when the server gave up on it.
    @discardableResult
    func complete(with answer: HTTPAnswer) -> Bool {
        lock.withLock {
            guard let connection else { return false }
            self.answer = answer
            self.connection = nil
            MHD_resume_connection(connection)
            return true
        }
    }

    /// Resumes the connection with `answer` unless the job has already (the server is stopping).
    func abandon(with answer: HTTPAnswer) { complete(with: answer) }

    /// Whether the connection still waits for the work (false once the server gave up on it).
    var isWaiting: Bool { lock.withLock { connection != nil } }

    /// The answer, once the connection has been resumed with it (taken once).
    func takeAnswer() -> HTTPAnswer? {
        lock.withLock {
            defer { answer = nil }
            return answer
        }
    }
}

extension HTTPServer {
    /// Runs a ``HandlerPlacement/pool`` route's work off the worker thread: suspends the
    /// connection, queues the work, and answers when the connection is resumed (see
    /// ``answerOffloaded(_:_:method:)``). With the queue full, the answer is 503 with
    /// `Retry-After` at once, and the connection is kept.
    func offload(
        _ work: @escaping @Sendable () -> HTTPAnswer, _ request: RequestState, on connection: OpaquePointer,
        method: String, loggedPath: String
    ) -> MHD_Result {
        let offloaded = OffloadedRequest(suspended: connection)
        let key = ObjectIdentifier(offloaded)
        // Suspended before the job is queued, so that the job can never resume it first; and
        // under the table's lock, so that a stop either finds it there or refuses it here:
        // libmicrohttpd must never stop with a connection suspended.
        let accepted = offloads.withLock { table -> Bool in
            guard table != nil else { return false }
            MHD_suspend_connection(connection)
            table?[key] = offloaded
            return true
        }
        guard accepted else {
            var response = Self.poolBusy(retryAfter: 5).response
            response.headers.set("Connection", "close")
            return send(response, on: connection, request, method: method, path: loggedPath)
        }
        request.offloaded = offloaded
        let descriptor = request.connection?.descriptor
        let pool = self.pool
        let queued = pool.submit(bucket: AddressRange.bucket(request.client(connection))) { [weak self] in
            // A request the server gave up on at a stop (answered 503) must not happen after all.
            guard offloaded.isWaiting else { return }
            // A client that gave up while its request waited is not worth the work.
            let gone = descriptor.map(ConnectionRegistry.peerHasClosed) ?? false
            let answer =
                gone ? HTTPAnswer(response: Self.poolBusy(retryAfter: 1).response, loggedPath: loggedPath) : work()
            offloaded.complete(with: answer)
            _ = self?.offloads.withLock { $0?.removeValue(forKey: key) }
        } refused: { [weak self] in
            // Displaced by a client holding fewer places in the queue.
            offloaded.complete(
                with: HTTPAnswer(
                    response: Self.poolBusy(retryAfter: pool.retryAfterSeconds).response, loggedPath: loggedPath))
            _ = self?.offloads.withLock { $0?.removeValue(forKey: key) }
        }
        if !queued {
            var response = Self.poolBusy(retryAfter: pool.retryAfterSeconds).response
            if draining.load(ordering: .relaxed) { response.headers.set("Connection", "close") }
            offloaded.complete(with: HTTPAnswer(response: response, loggedPath: loggedPath))
            _ = offloads.withLock { $0?.removeValue(forKey: key) }
        }
        return .YES
    }

    /// The access handler's call after an offloaded request's connection was resumed: sends the
    /// answer the job left.
    func answerOffloaded(_ request: RequestState, _ connection: OpaquePointer, method: String) -> MHD_Result {
        guard let offloaded = request.offloaded, let answer = offloaded.takeAnswer() else {
            // Resumed without an answer cannot happen; fail the request rather than spin.
            return send(HTTPError.internalError.response, on: connection, request, method: method, path: "-")
        }
        request.offloaded = nil
        if let failure = answer.failure {
            logger.error(
                "handler failed", metadata: ["path": answer.loggedPath, "error": String(describing: failure)])
        }
        return send(answer.response, on: connection, request, method: method, path: answer.loggedPath)
    }

    /// Resumes every connection whose work is still queued or running, with a 503, and refuses
    /// any later one: called before libmicrohttpd stops, which must not find a connection
    /// suspended.
    func abandonOffloads() {
        let left = offloads.withLock { table in
            defer { table = nil }
            return table.map { Array($0.values) } ?? []
        }
        let answer = HTTPAnswer(response: Self.poolBusy(retryAfter: 5).response, loggedPath: "-")
        left.forEach { $0.abandon(with: answer) }
    }

    /// 503 `unavailable` with `Retry-After`: the pool's queue is full.
    static func poolBusy(retryAfter seconds: Int) -> HTTPError {
        .unavailable(
            code: APIErrorCode.unavailable, message: "The server is busy with sign-ins right now. Try again shortly.",
            retryAfter: seconds)
    }
}
