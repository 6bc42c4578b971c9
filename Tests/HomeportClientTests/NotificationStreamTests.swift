import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Synchronization
import Testing

/// Scripted server-sent events.
enum SSE {
    static let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\r\n"

    static func notification(_ id: Int64, s: InstanceID?, title: String = "Turn ended") -> String {
        let notification = StreamNotification(
            id: id, s: s, c: "homeport/core:chat.turn-ended", object: id, thread: "chat:\(id)", mv: "m1", title: title,
            body: nil, at: 1_800_000_000)
        // Encoding these fields cannot fail.
        let json = String(decoding: (try? JSONEncoder().encode(notification)) ?? Data(), as: UTF8.self)
        return "id: \(id)\nevent: notification\ndata: \(json)\n\n"
    }

    static func answer(_ status: Int, _ headers: [String], _ body: String) -> String {
        "HTTP/1.1 \(status) Scripted\r\n" + headers.map { $0 + "\r\n" }.joined()
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }

    static let notAuthenticated = answer(
        401, ["Content-Type: application/json"],
        #"{"error":{"code":"not_authenticated","message":"Sign in to use this route."}}"#)
}

/// What a test saw of a stream.
struct Watched {
    var events: [NotificationStreamEvent] = []
    var error: (any Error)?

    var notifications: [StreamNotification] {
        events.compactMap {
            if case .notification(let notification) = $0 { return notification }
            return nil
        }
    }
    var ids: [Int64] { notifications.map(\.id) }
    var disconnects: [String] {
        events.compactMap {
            if case .disconnected(let reason, _) = $0 { return reason }
            return nil
        }
    }
}

/// Reads `stream` until `done` says so, it ends, or 300 s pass (then the test fails rather than
/// hangs). The guard is long because it is wall time: while the suite's synchronous tests hold
/// every thread of the concurrency pool, a stream that would take a second waits its turn.
/// `onEvent` runs after each event (to stop a listener, change the path, …).
func watch(
    _ stream: AsyncThrowingStream<NotificationStreamEvent, any Error>,
    until done: @escaping @Sendable (Watched) -> Bool,
    onEvent: @escaping @Sendable (Watched) -> Void = { _ in }
) async -> Watched {
    let reader = Task { () -> Watched in
        var watched = Watched()
        do {
            for try await event in stream {
                watched.events.append(event)
                onEvent(watched)
                if done(watched) { return watched }
            }
        } catch {
            watched.error = error
        }
        return watched
    }
    let guardTask = Task {
        try await Task.sleep(for: .seconds(300))
        reader.cancel()
    }
    let watched = await reader.value
    guardTask.cancel()
    if !done(watched) && watched.error == nil { Issue.record("the stream did not get there: \(watched.events)") }
    return watched
}

/// Sleeps that do not wait, and remember what they were asked.
final class Naps: Sendable {
    private let naps = Mutex<[Duration]>([])
    var all: [Duration] { naps.withLock { $0 } }
    var sleep: @Sendable (Duration) async throws -> Void {
        { duration in self.naps.withLock { $0.append(duration) } }
    }
}

@Suite("Notification stream: through the race, resumed without loss or duplicates, signed out only by the API")
struct NotificationStreamTests {
    let id = InstanceID(UUID())

    func peer(_ scripts: [[RecordingListener.StreamStep]], host: String = "127.0.0.1", id: InstanceID? = nil) throws
        -> RecordingListener
    {
        try RecordingListener(
            host: host,
            behaviour: .routesAndStreams(
                [HomeportPath.serverIdentity: Peer.identity(id ?? self.id)],
                streamPath: HomeportPath.notificationsStream,
                scripts))
    }

    func streamHeads(_ listener: RecordingListener) -> [String] {
        listener.heads("GET " + HomeportPath.notificationsStream)
    }

    @Test("a drop mid-event resumes with Last-Event-ID: nothing lost, nothing twice, the token header only")
    func resumeAfterDrop() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let half = String(SSE.notification(3, s: id).prefix(30))
        let server = try peer([
            [.write(SSE.head), .write(SSE.notification(1, s: id) + SSE.notification(2, s: id)), .write(half), .close],
            [.write(SSE.head), .write(SSE.notification(2, s: id)), .write(SSE.notification(3, s: id)), .hold],
            [.write(SSE.head), .write(SSE.notification(4, s: id)), .hold],
        ])
        let (client, _) = try scriptedClient(home, record: try record(id, primary: server.url))
        let naps = Naps()
        var watched = await watch(client.notificationStream(id.description, sleep: naps.sleep)) { $0.ids.count >= 3 }
        #expect(watched.ids == [1, 2, 3])
        let heads = streamHeads(server)
        #expect(heads.count == 2)
        #expect(!heads[0].lowercased().contains("last-event-id"))
        #expect(heads[1].contains("Last-Event-ID: 2"))
        #expect(heads.allSatisfy { $0.contains("X-Session-Token: t0ken") && !$0.lowercased().contains("cookie") })
        #expect(heads.allSatisfy { $0.contains("Accept: text/event-stream") })
        let probes = server.heads("GET " + HomeportPath.serverIdentity)
        #expect(probes.count >= 2, "the reconnection went through the race again")

        // A caller may resume after an id it kept.
        watched = await watch(client.notificationStream(id.description, resumingAfter: "3", sleep: naps.sleep)) {
            $0.ids.count >= 1
        }
        #expect(watched.ids == [4])
        #expect(streamHeads(server).last?.contains("Last-Event-ID: 3") == true)
    }

    @Test("one huge event id does not silence what follows: repeats are dropped by id, not by comparing numbers")
    func hugeIDDoesNotSilence() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try peer([
            [
                .write(SSE.head), .write(SSE.notification(1, s: id) + SSE.notification(Int64.max, s: id)),
                .write(SSE.notification(2, s: id)), .close,
            ],
            // The server sends 2 again on the next connection: a repeat, dropped.
            [.write(SSE.head), .write(SSE.notification(2, s: id) + SSE.notification(3, s: id)), .hold],
        ])
        let (client, _) = try scriptedClient(home, record: try record(id, primary: server.url))
        let watched = await watch(client.notificationStream(id.description, sleep: Naps().sleep)) {
            $0.ids.count >= 4
        }
        #expect(watched.ids == [1, Int64.max, 2, 3])
        #expect(streamHeads(server).last?.contains("Last-Event-ID: 2") == true)
    }

    @Test("when the address drops, the stream reconnects through the race to another verified address")
    func failover() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let primary = try peer([[.write(SSE.head), .write(SSE.notification(1, s: id)), .hold]])
        let alternative = try peer([[.write(SSE.head), .write(SSE.notification(2, s: id)), .hold]], host: "127.0.0.2")
        let enrolled = try record(id, primary: primary.url, verified: [alternative.url])
        let (client, _) = try scriptedClient(home, record: enrolled)
        let watched = await watch(client.notificationStream(id.description, sleep: Naps().sleep)) {
            $0.ids.count >= 2
        } onEvent: { watched in
            if watched.ids == [1] { primary.stop() }
        }
        #expect(watched.ids == [1, 2])
        #expect(watched.events.contains(.connected(via: alternative.url, resumingAfter: "1")))
        #expect(streamHeads(alternative).first?.contains("Last-Event-ID: 1") == true)
    }

    @Test(
        "an answer that is not the stream ends it and keeps the session",
        arguments: [
            SSE.answer(200, ["Content-Type: text/html"], "<!doctype html><form>Sign in</form>"),
            SSE.answer(401, ["Content-Type: text/plain", "WWW-Authenticate: Basic realm=\"proxy\""], "Unauthorized"),
            SSE.answer(401, ["Content-Type: text/html"], "<html>Sign in</html>"),
            SSE.answer(
                401, ["Content-Type: text/html", "Content-Type: application/json"],
                #"{"error":{"code":"not_authenticated","message":"x"}}"#),
            SSE.answer(200, ["Content-Type: text/html", "Content-Type: text/event-stream"], "data: x\n\n"),
            SSE.answer(200, ["Content-Type: application/json"], "{}"),
            SSE.answer(410, ["Content-Type: application/json"], #"{"status":410}"#),
            SSE.answer(200, [], "data: x\n\n"),
        ])
    func notTheStream(answer: String) async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try peer([[.write(answer)]])
        let enrolled = try record(id, primary: server.url)
        let events = EventLog()
        let (client, vault) = try scriptedClient(home, record: enrolled, events: events)
        let watched = await watch(client.notificationStream(id.description, sleep: Naps().sleep)) { _ in false }
        #expect(watched.error is ClientError)
        if case .signedOut = watched.error as? ClientError { Issue.record("signed out by \(answer)") }
        #expect(watched.notifications.isEmpty)
        #expect(try vault.token(for: enrolled.key) == "t0ken")
        #expect(!events.all.contains(.signedOut(server: enrolled.key)))
        #expect(server.streamsOpened == 1, "not retried")
    }

    @Test(
        "the session ends: the server closes the stream, the reconnection gets the API's 401, the account is signed out"
    )
    func sessionEnds() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try peer([
            [.write(SSE.head), .write(SSE.notification(1, s: id)), .close], [.write(SSE.notAuthenticated)],
        ])
        let enrolled = try record(id, primary: server.url)
        let events = EventLog()
        let (client, vault) = try scriptedClient(home, record: enrolled, events: events)
        let watched = await watch(client.notificationStream(id.description, sleep: Naps().sleep)) { _ in false }
        #expect(watched.ids == [1])
        #expect(watched.error as? ClientError == .signedOut(server: enrolled.key))
        #expect(try vault.token(for: enrolled.key) == nil)
        #expect(events.all.contains(.signedOut(server: enrolled.key)))
    }

    @Test("an event over the limit is skipped and the stream goes on; an event naming another server is discarded")
    func limitsAndForeignEvents() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let other = InstanceID(UUID())
        let server = try peer([
            [
                .write(SSE.head), .write(SSE.notification(1, s: other)),
                .write("id: 2\nevent: notification\ndata: {}\n\n"),
                .write(SSE.notification(3, s: id, title: String(repeating: "x", count: 4096))),
                .write(SSE.notification(4, s: id)), .hold,
            ]
        ])
        let (configured, _, _) = try multiServerClient(home, records: [try record(id, primary: server.url)]) {
            $0.streamEventLimit = 1024
        }
        let watched = await watch(configured.notificationStream(id.description, sleep: Naps().sleep)) { watched in
            watched.ids.contains(4)
        }
        #expect(
            watched.events.contains {
                if case .discarded("1", let reason) = $0 { return reason.contains("another server") }
                return false
            })
        #expect(
            watched.events.contains {
                if case .discarded("2", _) = $0 { return true }
                return false
            })
        #expect(watched.ids == [4], "only the notification after the oversized one is this server's")
        // The oversized event is skipped, not the end of the stream.
        #expect(
            watched.events.contains {
                if case .discarded("3", let reason) = $0 { return reason.contains("larger than 1024 bytes") }
                return false
            }, "\(watched.events)")
        #expect(watched.error == nil)
    }

    @Test("a silent stream is dropped after the idle time and reopened")
    func idle() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try peer([
            [.write(SSE.head), .hold], [.write(SSE.head), .write(SSE.notification(1, s: id)), .hold],
        ])
        let (client, _, _) = try multiServerClient(home, records: [try record(id, primary: server.url)]) {
            $0.streamIdleTimeout = .seconds(1)
        }
        let watched = await watch(client.notificationStream(id.description, sleep: Naps().sleep)) { $0.ids.count >= 1 }
        #expect(watched.ids == [1])
        #expect(watched.disconnects.first?.contains("nothing arrived") == true)
        #expect(streamHeads(server).count == 2)
    }

    @Test("heartbeats keep a stream alive; a connection past its lifetime is renewed, resuming after the last event")
    func lifetime() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let beats = Array(repeating: RecordingListener.StreamStep.write(": keepalive\n\n"), count: 10)
            .flatMap { [$0, .pause(0.2)] }
        let server = try peer([
            [.write(SSE.head), .write(SSE.notification(1, s: id))] + beats + [.hold],
            [.write(SSE.head), .write(SSE.notification(2, s: id)), .hold],
        ])
        let (client, _, _) = try multiServerClient(home, records: [try record(id, primary: server.url)]) {
            $0.streamIdleTimeout = .seconds(1)
            $0.streamLifetime = .seconds(1)
        }
        let watched = await watch(client.notificationStream(id.description, sleep: Naps().sleep)) { $0.ids.count >= 2 }
        #expect(watched.ids == [1, 2])
        #expect(watched.disconnects == ["the connection reached its lifetime"])
        #expect(streamHeads(server).last?.contains("Last-Event-ID: 1") == true)
    }

    @Test("a 503 is retried after its Retry-After; a network path change reconnects at once")
    func retriesAndPathChange() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try peer([
            [.write(SSE.answer(503, ["Content-Type: application/json", "Retry-After: 7"], "{}"))],
            [.write(SSE.head), .write(SSE.notification(1, s: id)), .hold],
            [.write(SSE.head), .write(SSE.notification(2, s: id)), .hold],
        ])
        let (client, _) = try scriptedClient(home, record: try record(id, primary: server.url))
        let naps = Naps()
        let watched = await watch(client.notificationStream(id.description, sleep: naps.sleep)) {
            $0.ids.count >= 2
        } onEvent: { watched in
            if case .notification(let notification) = watched.events.last, notification.id == 1 {
                client.networkPathChanged(to: "home")
            }
        }
        #expect(watched.ids == [1, 2])
        #expect(naps.all.first.map { $0 >= .seconds(7) } == true, "Retry-After was honoured")
        #expect(watched.disconnects.last?.contains("network path changed") == true)
        #expect(naps.all.last == .zero)
    }

    @Test("failures double the wait; a connection that delivered something, even one that then broke, starts it again")
    func backoff() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let unavailable = SSE.answer(503, ["Content-Type: application/json"], "{}")
        let event = SSE.notification(1, s: id)
        // Chunked, and cut inside a chunk: the transfer fails, it does not end.
        let chunkedHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        let chunk = String(event.utf8.count, radix: 16) + "\r\n" + event + "\r\n" + "400\r\nid: 2"
        let server = try peer([
            [.write(unavailable)], [.write(unavailable)], [.write(chunkedHead + chunk), .close],
            [.write(SSE.head), .write(SSE.notification(2, s: id)), .hold],
        ])
        let (client, _) = try scriptedClient(home, record: try record(id, primary: server.url))
        let naps = Naps()
        let watched = await watch(client.notificationStream(id.description, sleep: naps.sleep)) { $0.ids.count >= 2 }
        #expect(watched.ids == [1, 2])
        #expect(watched.disconnects.last?.contains("dropped") == true, "\(watched.disconnects)")
        let waits = naps.all
        try #require(waits.count == 3)
        #expect(waits[1] >= .seconds(1), "the second failure waits at least as long as the first could")
        #expect(waits[2] <= .seconds(1), "after a connection that delivered, the wait starts again")
        #expect(streamHeads(server).last?.contains("Last-Event-ID: 1") == true)
    }

    @Test("an off-host redirect on the stream is refused; nothing reaches the other host")
    func offHostRedirect() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let elsewhere = try peer([[.write(SSE.head), .hold]], host: "127.0.0.2")
        let server = try peer([[.write(SSE.answer(302, ["Location: \(elsewhere.url)/steal"], ""))]])
        let (client, _) = try scriptedClient(home, record: try record(id, primary: server.url))
        let watched = await watch(client.notificationStream(id.description, sleep: Naps().sleep)) { _ in false }
        guard case .offHostRedirect = watched.error as? ClientError else {
            Issue.record("expected an off-host redirect, got \(String(describing: watched.error))")
            return
        }
        #expect(elsewhere.requests.isEmpty)
    }

    @Test("URLSessionTransport streams too (it is the transport on Apple platforms)")
    func urlSessionTransport() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try peer([
            [.write(SSE.head), .write(SSE.notification(1, s: id)), .pause(0.2), .write("id: 2\ndata"), .close],
            [.write(SSE.head), .write(SSE.notification(2, s: id)), .hold],
        ])
        let (base, vault, _) = try multiServerClient(home, records: [try record(id, primary: server.url)])
        let client = HomeportClient(
            directory: base.directory, vault: vault, transport: URLSessionTransport(), networkPath: "home")
        let watched = await watch(client.notificationStream(id.description, sleep: Naps().sleep)) { $0.ids.count >= 2 }
        #expect(watched.ids == [1, 2])
        #expect(streamHeads(server).last?.lowercased().contains("last-event-id: 1") == true)
    }
}
