import Foundation
import HomeportWire

/// What the in-app notification stream reports.
public enum NotificationStreamEvent: Sendable, Equatable {
    /// Connected through `via`, resuming after `resumingAfter` (`nil`: new notifications only).
    case connected(via: String, resumingAfter: String?)
    /// A notification of the server, its text cleaned of terminal controls.
    case notification(StreamNotification)
    /// An event that was read but not delivered, and why (it names another server, its data is
    /// not a notification). The stream resumes after it all the same.
    case discarded(eventID: String, reason: String)
    /// The connection ended, for `reason`; the client reconnects, through a fresh race, after `retryIn`.
    case disconnected(reason: String, retryIn: Duration)
}

extension HomeportClient {
    /// The in-app notification stream of `server` (`GET /api/v1/notifications/stream`,
    /// server-sent events), as long as the caller reads it.
    ///
    /// Every connection goes through the address race with the session token header only (no
    /// cookie, no stored state). After a drop, an idle spell (no event and no heartbeat for
    /// ``ClientConfiguration/streamIdleTimeout``), the end of a connection's lifetime
    /// (``ClientConfiguration/streamLifetime``) or a network-path change, it reconnects through a
    /// fresh race with `Last-Event-ID`, so nothing is lost; an event only half received when the
    /// connection drops is discarded and comes again, and an event whose id is one of the last
    /// 1,024 delivered is dropped, so nothing is delivered twice. Ids are not
    /// compared as numbers: one huge id (a server restored from a backup numbers again from
    /// lower) must not silence every event after it. Failures that may pass
    /// (no answer, no verified address, 5xx, 429 with its `Retry-After`) are retried with a
    /// doubling delay; the stream ends with an error on the API's own refusal of the session
    /// (``ClientError/signedOut(server:)``, the account is signed out as for any request), and on
    /// any answer that is not the stream (a web page, a proxy's 401 — the session is kept —, an
    /// off-host redirect). An event over ``ClientConfiguration/streamEventLimit`` is skipped and
    /// reported as ``NotificationStreamEvent/discarded(eventID:reason:)``; the stream goes on.
    ///
    /// - Parameters:
    ///   - server: the server: its handle, its record or its key (``ServerReference``), found
    ///     again at each reconnection.
    ///   - lastEventID: resume after this event id (`nil`: new notifications only).
    ///   - sleep: how the stream waits before reconnecting (tests pass one that does not wait).
    public func notificationStream(
        _ server: some ServerReference, resumingAfter lastEventID: String? = nil,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) -> AsyncThrowingStream<NotificationStreamEvent, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await self.runNotificationStream(server, lastEventID: lastEventID, sleep: sleep) {
                        continuation.yield($0)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Why one connection of the stream ended.
    private struct ConnectionEnd {
        var reason: String
        /// Whether it delivered a new event or stayed open as long as the stream may be silent:
        /// the retry delay starts again.
        var healthy: Bool
        /// Reconnect at once (the lifetime ended, the network path changed).
        var immediate = false
        /// The server's `Retry-After`.
        var retryAfter: Duration?
    }

    private func runNotificationStream(
        _ server: some ServerReference, lastEventID: String?, sleep: @Sendable (Duration) async throws -> Void,
        yield: (NotificationStreamEvent) -> Void
    ) async throws {
        var cursor = StreamCursor(lastEventID: lastEventID.flatMap(Self.sendableEventID))
        var delay = configuration.streamRetryDelay
        while true {
            try Task.checkCancellation()
            let key = try server.record(in: directory).key
            let end: ConnectionEnd
            do {
                end = try await streamOnce(key, cursor: &cursor, yield: yield)
            } catch let error as ClientError where error.isUnreachable || Self.isNoAddress(error) {
                end = ConnectionEnd(reason: error.description, healthy: false)
            } catch let failure as RetryableAnswer {
                end = ConnectionEnd(reason: failure.reason, healthy: false, retryAfter: failure.retryAfter)
            } catch is CancellationError where !Task.isCancelled {
                end = ConnectionEnd(reason: "the network path changed", healthy: false, immediate: true)
            }
            forgetWinner(key)
            if end.healthy { delay = cursor.retry ?? configuration.streamRetryDelay }
            var wait: Duration = end.immediate ? .zero : delay * Double.random(in: 0.5...1.0)
            if let retryAfter = end.retryAfter { wait = max(wait, retryAfter) }
            if !end.immediate && !end.healthy {
                delay = min(delay * 2, configuration.streamMaximumRetryDelay)
            }
            yield(.disconnected(reason: end.reason, retryIn: wait))
            try await sleep(wait)
        }
    }

    /// Where the stream stands: the id to resume after, the ids delivered lately, the server's
    /// retry time.
    struct StreamCursor {
        /// How many delivered ids are remembered to drop a repeat.
        static let remembered = 1024

        var lastEventID: String?
        var retry: Duration?
        private var order: [String] = []
        private var seen: Set<String> = []

        init(lastEventID: String?) {
            self.lastEventID = lastEventID
        }

        /// Notes `id` as delivered; `false` when it was delivered already (a repeat to drop).
        mutating func firstDelivery(of id: String) -> Bool {
            guard !id.isEmpty else { return true }
            guard seen.insert(id).inserted else { return false }
            order.append(id)
            if order.count > Self.remembered { seen.remove(order.removeFirst()) }
            return true
        }
    }

    /// One connection: chosen through the race, opened, read until it ends.
    private func streamOnce(
        _ key: String, cursor: inout StreamCursor, yield: (NotificationStreamEvent) -> Void
    ) async throws -> ConnectionEnd {
        let record = try key.record(in: directory)
        guard !record.signedOut, let token = try vault.token(for: record.key) else {
            throw ClientError.signedOut(server: record.key)
        }
        let generation = openStreams.generation
        let choice = try await choose(for: record)
        let stream = try await openStream(cursor.lastEventID, token: token, at: choice, record: record)
        // The network path changed while it opened: its address was chosen on the old one.
        guard openStreams.add(stream, since: generation) else { throw CancellationError() }
        defer {
            openStreams.remove(stream)
            stream.cancel()
        }
        yield(.connected(via: choice.address.url, resumingAfter: cursor.lastEventID))
        var parser = ServerSentEventParser(limit: configuration.streamEventLimit, lastEventID: cursor.lastEventID ?? "")
        let opened = ContinuousClock.now
        let expires = opened + configuration.streamLifetime
        // A connection is healthy (the next wait starts again from the first) when it delivered a
        // new event, or stayed open at least as long as the stream may be silent: a server that
        // sends one heartbeat and closes, or replays an event already delivered and closes, is
        // backed off, not reconnected every second forever.
        var delivered = false
        var healthy: Bool { delivered || ContinuousClock.now - opened >= configuration.streamIdleTimeout }
        while true {
            let read: Read
            do {
                read = try await Self.read(stream, idle: configuration.streamIdleTimeout, until: expires)
            } catch let error as ClientError where error.isUnreachable {
                // A drop: what this connection delivered still counts.
                return ConnectionEnd(reason: error.description, healthy: healthy)
            }
            let chunk: Data
            switch read {
            case .chunk(let data): chunk = data
            case .ended:
                return ConnectionEnd(reason: "the server ended the stream", healthy: healthy)
            case .idle:
                return ConnectionEnd(reason: "nothing arrived for \(configuration.streamIdleTimeout)", healthy: healthy)
            case .expired:
                return ConnectionEnd(reason: "the connection reached its lifetime", healthy: true, immediate: true)
            }
            for item in parser.feed(chunk) {
                switch item {
                case .comment: break
                case .overflow(let limit, let skippedID):
                    // Skipped, not the end of the stream: the resume point moves past it.
                    if cursor.firstDelivery(of: skippedID) {
                        if !skippedID.isEmpty { delivered = true }
                        yield(
                            .discarded(
                                eventID: ServerText.clean(skippedID, limit: 128),
                                reason: "it is larger than \(limit) bytes"))
                    }
                    if let id = Self.sendableEventID(skippedID) { cursor.lastEventID = id }
                case .retry(let milliseconds):
                    cursor.retry = min(
                        max(.milliseconds(milliseconds), .milliseconds(500)), configuration.streamMaximumRetryDelay)
                case .event(let event):
                    // A repeat is dropped, and is no progress; nor is an event without an id (a
                    // repeat of one cannot be told).
                    if cursor.firstDelivery(of: event.lastEventID) {
                        if !event.lastEventID.isEmpty { delivered = true }
                        if let notification = deliver(event, of: record) { yield(notification) }
                    }
                    if let id = Self.sendableEventID(event.lastEventID) { cursor.lastEventID = id }
                }
            }
            // An event without data still moves the resume point (the standard's last event id).
            if let id = Self.sendableEventID(parser.lastEventID) { cursor.lastEventID = id }
        }
    }

    /// What an event becomes: a notification of this server, a note that it was discarded, or
    /// nothing (another type of event).
    private func deliver(_ event: ServerSentEvent, of record: ServerRecord) -> NotificationStreamEvent? {
        let id = ServerText.clean(event.lastEventID, limit: 128)
        guard event.type == "notification" else { return nil }
        guard let notification = try? JSONDecoder().decode(StreamNotification.self, from: Data(event.data.utf8)) else {
            return .discarded(eventID: id, reason: "its data is not a notification")
        }
        if let s = notification.s, let own = record.instanceID, s != own {
            return .discarded(eventID: id, reason: "it names another server (\(s))")
        }
        return .notification(
            StreamNotification(
                id: notification.id, s: notification.s, c: ServerText.clean(notification.c),
                object: notification.object,
                thread: notification.thread.map { ServerText.clean($0) },
                mv: notification.mv.map { ServerText.clean($0) },
                title: ServerText.clean(notification.title), body: notification.body.map { ServerText.clean($0) },
                at: notification.at))
    }

    /// Opens the stream at the chosen address: same-origin redirects followed, and an answer that
    /// is not the stream judged like any other (sign-out rules, web pages) before it is refused.
    private func openStream(_ lastEventID: String?, token: String, at choice: Choice, record: ServerRecord)
        async throws -> ClientStream
    {
        let address = choice.address
        let path = HomeportPath.notificationsStream
        guard var url = address.url(path) else { throw ClientError.invalidAddress(address.url + path) }
        for _ in 0...3 {
            var headers = ["Accept": "text/event-stream", "Cache-Control": "no-cache"]
            if let lastEventID { headers["Last-Event-ID"] = lastEventID }
            let stream = try await transport.open(
                try credentialed(
                    ClientRequest(
                        url: url, headers: headers, byteLimit: configuration.streamEventLimit,
                        deadline: configuration.requestDeadline),
                    token: token, for: .chosen(choice, alternativeMatched: false)))
            if Self.isRedirect(stream.status) {
                stream.cancel()
                url = try Self.sameOriginTarget(
                    of: ClientResponse(status: stream.status, headers: stream.headers, body: Data()), from: url,
                    at: address)
                continue
            }
            if stream.status == 200, Self.isEventStream(stream.headers) { return stream }
            let body = try await Self.withDeadline(configuration.requestDeadline, address: address.url) {
                try await stream.readAll(limit: self.configuration.byteLimit, address: address.url)
            }
            let response = ClientResponse(status: stream.status, headers: stream.headers, body: body)
            try judge(response, path: path, choice: choice, record: record, token: token)
            if [408, 429].contains(response.status) || (500...599).contains(response.status) {
                throw RetryableAnswer(
                    reason: "\(address.url) answered \(response.kind)",
                    retryAfter: response.headers["retry-after"].flatMap(Self.retryAfter))
            }
            if response.status == 200 {
                throw ClientError.notAnAPI(address: address.url, answer: response.kind + ", not an event stream")
            }
            throw Self.refusal(Answer(response: response, via: address))
        }
        throw ClientError.badAnswer(address: address.url, detail: "too many redirects")
    }

    /// An answer after which reconnecting may help (5xx, 429, 408).
    private struct RetryableAnswer: Error {
        var reason: String
        var retryAfter: Duration?
    }

    private enum Read {
        case chunk(Data)
        case ended
        case idle
        case expired
    }

    /// The next chunk, or why there is none: the body ended, nothing came for `idle`, or the
    /// connection's lifetime ran out (`until`). Waiting past either ends the stream.
    private static func read(_ stream: ClientStream, idle: Duration, until expires: ContinuousClock.Instant)
        async throws -> Read
    {
        let remaining = expires - ContinuousClock.now
        guard remaining > .zero else { return .expired }
        let wait = min(idle, remaining)
        return try await withThrowingTaskGroup(of: Read?.self) { group in
            group.addTask { try await stream.next().map { .chunk($0) } ?? .ended }
            group.addTask {
                try await Task.sleep(for: wait)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { return .ended }
            return first ?? (remaining <= idle ? .expired : .idle)
        }
    }

    /// Runs `body`, failing with ``ClientError/unreachable(address:reason:)`` after `deadline`.
    private static func withDeadline<T: Sendable>(
        _ deadline: Duration, address: String, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: deadline)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw ClientError.unreachable(address: address, reason: "the answer did not end within \(deadline)")
            }
            return value
        }
    }

    /// Whether the content type is `text/event-stream` (parameters allowed), and only that.
    static func isEventStream(_ headers: [String: String]) -> Bool {
        guard let type = headers["content-type"] else { return false }
        let media = type.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return media.trimmingCharacters(in: .whitespaces).lowercased() == "text/event-stream"
    }

    /// An event id that may go into `Last-Event-ID`: printable ASCII, at most 128 characters.
    static func sendableEventID(_ id: String) -> String? {
        guard !id.isEmpty, id.utf8.count <= 128, id.utf8.allSatisfy({ (0x20...0x7E).contains($0) }),
            id.first != " ", id.last != " "
        else { return nil }
        return id
    }

    /// `Retry-After` in seconds (a date is not taken), at most ten minutes.
    static func retryAfter(_ text: String) -> Duration? {
        guard let seconds = Int(text.trimmingCharacters(in: .whitespaces)), seconds >= 0 else { return nil }
        return .seconds(min(seconds, 600))
    }

    private static func isNoAddress(_ error: ClientError) -> Bool {
        if case .noVerifiedAddress = error { return true }
        return false
    }
}
