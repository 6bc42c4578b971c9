import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An answer's fields without `Date` (which libmicrohttpd writes at each sending), sorted.
private func fieldsWithoutDate(_ response: RawResponse) -> [String] {
    response.headers.filter { $0.name.lowercased() != "date" }.map { "\($0.name): \($0.value)" }.sorted()
}

/// The answer every test prepares: what forward auth answers, in shape.
private func sampleAnswer() -> HTTPResponse {
    var answer = HTTPResponse.json(bytes: Data(#"{"accountId":7,"email":"ada@example.com"}"#.utf8))
    answer.headers.add("X-Homeport-Account-Id", "7")
    answer.headers.add("X-Homeport-Account-Email", "ada@example.com")
    answer.headers.set("Cache-Control", "no-store")
    return answer
}

/// Adds a header field, or sets the status, on every answer of its group.
private struct Change: HTTPMiddleware {
    var field: (name: String, value: String)?
    var status: Int?

    func handle(
        _ request: HTTPRequest, context: EmptyRequestContext,
        next: (HTTPRequest, EmptyRequestContext) throws -> HTTPResponse
    ) throws -> HTTPResponse {
        var response = try next(request, context)
        if let field { response.headers.add(field.name, field.value) }
        if let status { response.status = status }
        return response
    }
}

@Suite("A prepared answer: built into libmicrohttpd once, sent as it is, or not at all when changed")
struct PreparedResponseTests {
    @Test("it goes out as the bytes of the same answer built per request: once, again, as HEAD, and to 8 at once")
    func sameBytes() throws {
        let prepared = PreparedResponse(sampleAnswer())
        let raced = PreparedResponse(sampleAnswer())
        var router = TestRouter()
        router.get("/built") { _, _ in sampleAnswer() }
        router.get("/prepared") { _, _ in prepared.response }
        router.get("/raced") { _, _ in raced.response }
        try withServer(router) { server in
            let built = try RawHTTP.request(port: server.port, path: "/built")
            #expect(built.status == 200 && built.header("X-Homeport-Account-Id") == "7")
            for _ in 0..<3 {
                let sent = try RawHTTP.request(port: server.port, path: "/prepared")
                #expect(sent.status == 200)
                #expect(fieldsWithoutDate(sent) == fieldsWithoutDate(built))
                #expect(sent.body == built.body)
            }
            // HEAD: the same fields (Content-Length too), no body, and the connection goes on.
            let fd = try RawHTTP.connect(port: server.port)
            defer { close(fd) }
            RawHTTP.send(fd, "HEAD /prepared HTTP/1.1\r\nHost: x\r\n\r\nGET /prepared HTTP/1.1\r\nHost: x\r\n\r\n")
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while String(decoding: bytes, as: UTF8.self).components(separatedBy: "HTTP/1.1 200").count < 3
                || !String(decoding: bytes, as: UTF8.self).hasSuffix("}")
            {
                let count = recv(fd, &chunk, chunk.count, 0)
                guard count > 0 else { break }
                bytes += chunk[..<count]
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let parts = text.components(separatedBy: "HTTP/1.1 200 OK\r\n").dropFirst()
            #expect(parts.count == 2, "\(text)")
            let head = parts.first ?? ""
            #expect(head.hasSuffix("\r\n\r\n") && head.contains("Content-Length: \(built.body.count)\r\n"))
            #expect(parts.last?.hasSuffix(String(decoding: built.body, as: UTF8.self)) == true)

            // Its first sending, from 8 connections let go at once: every one gets the same answer.
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            let answers = LockedBox<[RawResponse]>([])
            for _ in 0..<8 {
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    guard let fd = try? RawHTTP.connect(port: server.port) else { return }
                    defer { close(fd) }
                    start.wait()
                    RawHTTP.send(fd, "GET /raced HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if let answer = try? RawHTTP.readResponse(fd) { answers.mutate { $0.append(answer) } }
                }
            }
            usleep(100_000)
            for _ in 0..<8 { start.signal() }
            #expect(done.wait(timeout: .now() + 30) == .success)
            let all = answers.value
            #expect(all.count == 8)
            #expect(all.allSatisfy { fieldsWithoutDate($0) == fieldsWithoutDate(built) && $0.body == built.body })
        }
    }

    @Test("a middleware's change after the route reaches the client: a field added, a status set")
    func changedAnswerIsBuilt() throws {
        let prepared = PreparedResponse(sampleAnswer())
        var router = TestRouter()
        router.group("/stamped", middleware: [Change(field: ("X-Stamp", "yes"))])
        router.group("/created", middleware: [Change(status: 201)])
        router.group("/plain", middleware: [NoStoreMiddleware()])
        for path in ["/stamped", "/created", "/plain"] {
            router.get(path) { _, _ in prepared.response }
        }
        try withServer(router) { server in
            for _ in 0..<2 {
                let plain = try RawHTTP.request(port: server.port, path: "/plain")
                let stamped = try RawHTTP.request(port: server.port, path: "/stamped")
                let created = try RawHTTP.request(port: server.port, path: "/created")
                #expect(plain.status == 200 && plain.header("X-Stamp") == nil)
                #expect(stamped.status == 200 && stamped.header("X-Stamp") == "yes")
                #expect(created.status == 201 && created.header("X-Stamp") == nil)
                #expect(fieldsWithoutDate(stamped) == (fieldsWithoutDate(plain) + ["X-Stamp: yes"]).sorted())
                #expect(fieldsWithoutDate(created) == fieldsWithoutDate(plain))
                #expect([stamped.body, created.body].allSatisfy { $0 == plain.body })
            }
        }
        // Which answers are sent prepared: the one the no-store middleware found already so, not the others.
        let run = { (path: String) in router.respond(to: HTTPRequest(method: .get, path: path)).response }
        #expect(prepared.copy(for: run("/plain"), strictTransport: false) != nil)
        #expect(
            prepared.copy(for: run("/plain"), strictTransport: false)
                == prepared.copy(for: prepared.response, strictTransport: false))
        #expect(prepared.copy(for: run("/stamped"), strictTransport: false) == nil)
        #expect(prepared.copy(for: run("/created"), strictTransport: false) == nil)
        var streamed = prepared.response
        streamed.stream = HTTPBodyStream()
        #expect(prepared.copy(for: streamed, strictTransport: false) == nil, "a stream given to it is sent as a stream")
        #expect(
            prepared.copy(for: prepared.response, strictTransport: true)
                != prepared.copy(for: prepared.response, strictTransport: false))
    }

    @Test("set(_:_:) writes nothing when the field is already so, and still replaces a differing or repeated one")
    func setThatChangesNothing() {
        var headers: HTTPHeaders = ["Cache-Control": "no-store", "X-A": "1"]
        let before = headers
        headers.set("cache-control", "no-store")
        #expect(headers.fields.map(\.name) == ["Cache-Control", "X-A"])
        #expect(headers.hasSameFields(as: before))
        headers.set("Cache-Control", "private")
        #expect(headers.fields.map { "\($0.name)=\($0.value)" } == ["X-A=1", "Cache-Control=private"])
        headers.add("Cache-Control", "private")
        headers.set("Cache-Control", "private")
        #expect(headers.values("Cache-Control") == ["private"])
    }

    @Test("an answer prepared for a route that finishes while the server drains still says Connection: close")
    func drainingClosesTheConnection() throws {
        let prepared = PreparedResponse(sampleAnswer())
        let release = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        var router = TestRouter()
        router.get("/prepared") { request, _ in
            if request.headers["X-Wait"] != nil {
                entered.signal()
                release.wait()
            }
            return prepared.response
        }
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, workerThreads: 2), responder: router,
            logger: Logger(label: "test", sink: MemoryLogSink()))
        try server.start()
        // Sent prepared once before the drain, so that a copy exists.
        let inFlight = try RawHTTP.connect(port: server.port)
        defer { close(inFlight) }
        RawHTTP.send(inFlight, "GET /prepared HTTP/1.1\r\nHost: x\r\n\r\n")
        let before = try RawHTTP.readResponse(inFlight)
        #expect(before.status == 200 && before.header("Connection") == nil)
        RawHTTP.send(inFlight, "GET /prepared HTTP/1.1\r\nHost: x\r\nX-Wait: 1\r\n\r\n")
        #expect(entered.wait(timeout: .now() + 10) == .success)
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            server.shutdown()
            stopped.signal()
        }
        // The listener is gone once the drain has begun.
        eventually(timeout: .seconds(2), every: .milliseconds(10)) {
            guard let fd = try? RawHTTP.connect(port: server.port, timeout: 1) else { return true }
            close(fd)
            return false
        }
        release.signal()
        let answer = try RawHTTP.readResponse(inFlight)
        #expect(answer.status == 200 && answer.header("X-Homeport-Account-Id") == "7")
        #expect(answer.header("Connection")?.lowercased() == "close")
        #expect(stopped.wait(timeout: .now() + 10) == .success)
    }
}
