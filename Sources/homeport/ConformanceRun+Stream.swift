import Foundation
import HomeportClient
import HomeportWire

/// The in-app stream's check, with the test account's session: events as they happen, a resume
/// with `Last-Event-ID`, and the end of a stream when its session ends.
extension ConformanceRun {
    /// Two test notifications on an open stream; a second stream resumed after the first event
    /// starts with the second; a stream of another session ends when that session logs out.
    func stream() async throws -> ConformanceOutcome {
        guard let account else { return Self.noAccount }
        guard let token else { return Self.noSession }
        if olderServer { return Self.noPrefix }
        let path = HomeportPath.notificationsStream
        let first = try await http.open(path, headers: [HomeportHeader.sessionToken: token])
        defer { first.cancel() }
        guard first.status == 200, first.headers["content-type"]?.hasPrefix("text/event-stream") == true else {
            return .fail(
                "GET \(path) answered \(first.status) (\(first.headers["content-type"].map { ServerText.clean($0, limit: 40) } ?? "no Content-Type")), not 200 text/event-stream"
            )
        }
        var seen = StreamText()
        guard try await seen.read(first, until: { $0.contains(":") }, within: http.deadline) else {
            return .fail("the stream sent nothing within \(http.deadline)")
        }
        var ids: [Int64] = []
        for _ in 0..<2 {
            let test = try await http.send("POST", HomeportPath.pushTest, headers: [HomeportHeader.sessionToken: token])
            if test.status == 429 {
                return .skipped("the account's test-notification budget is spent (429): run again later")
            }
            guard test.status == 202 else { return .fail("POST \(HomeportPath.pushTest) answered \(test.summary)") }
            let before = seen.ids.count
            guard try await seen.read(first, until: { StreamText.ids(in: $0).count > before }, within: http.deadline),
                let id = seen.ids.last
            else { return .fail("a test notification did not reach the open stream within \(http.deadline)") }
            ids.append(id)
        }
        guard ids[1] > ids[0] else { return .fail("event ids \(ids[0]) then \(ids[1]) do not grow") }
        first.cancel()

        let resumed = try await http.open(
            path, headers: [HomeportHeader.sessionToken: token, "Last-Event-ID": String(ids[0])])
        defer { resumed.cancel() }
        var again = StreamText()
        guard try await again.read(resumed, until: { !StreamText.ids(in: $0).isEmpty }, within: http.deadline),
            let firstResumed = again.ids.first
        else { return .fail("a stream resumed with Last-Event-ID \(ids[0]) sent no event") }
        guard firstResumed == ids[1] else {
            return .fail("resumed after \(ids[0]), the first event is \(firstResumed), not \(ids[1])")
        }
        resumed.cancel()

        // Another session's stream ends when that session logs out.
        let other = try await http.post(
            AllauthAppPath.path(AllauthAppPath.login), json: ["email": account.email, "password": account.password])
        guard let second = other.json?["meta"]?["session_token"]?.string else {
            return .fail("a second login gave no token (\(other.summary))")
        }
        keep(second)
        let ending = try await http.open(path, headers: [HomeportHeader.sessionToken: second])
        defer { ending.cancel() }
        var last = StreamText()
        _ = try await last.read(ending, until: { $0.contains(":") }, within: http.deadline)
        _ = try? await http.send(
            "DELETE", AllauthAppPath.path(AllauthAppPath.session), headers: [HomeportHeader.sessionToken: second])
        guard try await last.readToEnd(ending, within: .seconds(5)) else {
            otherTokens.append(second)
            return .fail("the stream of a session that logged out was still open 5 s later")
        }
        return .pass(
            "events \(ids[0]) and \(ids[1]) as they happened; resumed after \(ids[0]) with \(ids[1]); a logged-out session's stream ended"
        )
    }
}

/// What a stream sent so far, and the event ids in it.
struct StreamText {
    private(set) var text = ""

    /// The `id:` fields of the events so far.
    var ids: [Int64] { Self.ids(in: text) }

    /// The `id:` fields of the events in `text`.
    static func ids(in text: String) -> [Int64] {
        text.split(separator: "\n").compactMap { line in
            line.hasPrefix("id:") ? Int64(line.dropFirst(3).trimmingCharacters(in: .whitespaces)) : nil
        }
    }

    /// Reads chunks until `done(text)` holds or `deadline` passes; whether it held.
    mutating func read(_ stream: ClientStream, until done: (String) -> Bool, within deadline: Duration) async throws
        -> Bool
    {
        let end = ContinuousClock.now + deadline
        while !done(text) {
            do {
                guard ContinuousClock.now < end, let chunk = try await Self.next(stream, before: end) else {
                    return done(text)
                }
                text += String(decoding: chunk, as: UTF8.self)
            } catch is TimedOut {
                return done(text)
            }
            if text.utf8.count > 1 << 20 { return done(text) }
        }
        return true
    }

    /// Reads until the server ends the stream; false if it is still open after `deadline`.
    mutating func readToEnd(_ stream: ClientStream, within deadline: Duration) async throws -> Bool {
        let end = ContinuousClock.now + deadline
        while ContinuousClock.now < end {
            do {
                guard let chunk = try await Self.next(stream, before: end) else { return true }
                text += String(decoding: chunk, as: UTF8.self)
            } catch is TimedOut {
                return false
            } catch {
                return true
            }
        }
        return false
    }

    private struct TimedOut: Error {}

    /// The next chunk, or ``TimedOut`` at `end`.
    private static func next(_ stream: ClientStream, before end: ContinuousClock.Instant) async throws -> Data? {
        try await withThrowingTaskGroup(of: Data?.self) { group in
            group.addTask { try await stream.next() }
            group.addTask {
                try await Task.sleep(until: end)
                throw TimedOut()
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }
}
