import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

@Suite("send(_:as:): an API answer decoded, a refusal thrown with the server's words; the request hook")
struct SendDecodingTests {
    private struct Shelf: Decodable, Equatable {
        var id: Int
        var title: String
    }

    private let id = InstanceID(UUID())

    /// A server answering `routes` besides its identity and app-info, and a client signed in there
    /// whose configuration has `hook`.
    private func client(
        _ home: TemporaryDirectory, _ routes: [String: RecordingListener.Canned],
        hook: (@Sendable (inout OutgoingRequest) -> Void)? = nil
    ) throws -> (HomeportClient, RecordingListener, ServerRecord) {
        let listener = try RecordingListener(
            behaviour: .routes(
                routes.merging([
                    HomeportPath.serverIdentity: Peer.identity(id), HomeportPath.appInfo: Peer.appInfo(id),
                ]) { $1 }))
        let enrolled = try record(id, primary: listener.url)
        let vault = MemoryVault()
        let directory = try ServerDirectory(directory: home.file(UUID().uuidString))
        try directory.save(enrolled)
        try vault.store(token: "s3cret-t0ken", for: enrolled.key)
        var configuration = ClientConfiguration()
        configuration.requestDeadline = .seconds(2)
        configuration.requestHook = hook
        return (
            HomeportClient(directory: directory, vault: vault, configuration: configuration, networkPath: "home"),
            listener, enrolled
        )
    }

    @Test("a 2xx JSON answer decodes; a refusal, an HTML page and JSON of another shape throw, each saying which")
    func decodes() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let (client, _, server) = try client(
            home,
            [
                "/api/v1/shelf/1": .init(200, Peer.json, #"{"id":1,"title":"Dune","extra":true}"#),
                "/api/v1/shelf/2": .init(
                    409, Peer.json,
                    #"{"error":{"code":"shelf_full","message":"The shelf is full.","field":"shelf"}}"#),
                "/api/v1/shelf/3": .init(200, ["Content-Type": "text/html"], "<html>Sign in to the Wi-Fi</html>"),
                "/api/v1/shelf/4": .init(200, Peer.json, #"{"id":"one"}"#),
                "/api/v1/shelf/5": .init(502, ["Content-Type": "text/html"], "<h1>Bad gateway</h1>"),
                "/api/v1/shelf/6": .init(200, ["Content-Type": "text/plain"], "ok"),
            ])
        let shelf = try await client.send("GET", "/api/v1/shelf/1", to: server.key, as: Shelf.self)
        #expect(shelf == Shelf(id: 1, title: "Dune"))
        await #expect {
            _ = try await client.send("GET", "/api/v1/shelf/2", to: server.key, as: Shelf.self)
        } throws: { error in
            guard case ClientError.refused(_, 409, "shelf_full", "The shelf is full.", "shelf") = error else {
                return false
            }
            return (error as? ClientError)?.localizedDescription == "The shelf is full."
        }
        // A page from something in between is not the API (as for every request); JSON of another
        // shape, or text, is an answer this route cannot have given.
        for (path, page) in [
            ("/api/v1/shelf/3", true), ("/api/v1/shelf/5", true), ("/api/v1/shelf/4", false),
            ("/api/v1/shelf/6", false),
        ] {
            await #expect(Comment(rawValue: path)) {
                _ = try await client.send("GET", path, to: server.key, as: Shelf.self)
            } throws: { error in
                switch error {
                case ClientError.notAnAPI: page
                case ClientError.badAnswer(_, let detail): !page && detail.contains(path)
                default: false
                }
            }
        }
    }

    @Test(
        "the hook sees the request without the token and adds a language field; a credential it adds stops the request")
    func hook() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let seen = LockedBox([String]())
        let (client, listener, server) = try client(
            home, ["/api/v1/shelf/1": .init(200, Peer.json, #"{"id":1,"title":"Dune"}"#)]
        ) { request in
            seen.mutate { $0.append("\(request.method) \(request.path) \(request.server) \(request.headers)") }
            request.headers["Accept-Language"] = "fr"
        }
        _ = try await client.send("GET", "/api/v1/shelf/1", to: server.key, as: Shelf.self)
        #expect(seen.value == ["GET /api/v1/shelf/1 \(server.key) [:]"])
        #expect(!seen.value.joined().contains("s3cret"), "the hook never sees the token")
        let head = try #require(listener.requests.last { $0.hasPrefix("GET /api/v1/shelf/1") })
        #expect(head.lowercased().contains("accept-language: fr"))
        #expect(head.contains("s3cret-t0ken"), "the client still sends the token itself")

        for field in ["X-Session-Token", "Authorization", "Cookie", "Host", "X-Forwarded-For", "If-None-Match"] {
            let home = try TemporaryDirectory()
            defer { home.remove() }
            let (client, listener, server) = try self.client(
                home, ["/api/v1/shelf/1": .init(200, Peer.json, #"{"id":1,"title":"Dune"}"#)]
            ) { request in request.headers[field] = "stolen" }
            await #expect(Comment(rawValue: field)) {
                _ = try await client.send("GET", "/api/v1/shelf/1", to: server.key, as: Shelf.self)
            } throws: { error in
                guard case ClientError.invalidInput(let text) = error else { return false }
                return text.contains(field)
            }
            #expect(!listener.requests.contains { $0.contains("/api/v1/shelf") }, "nothing was sent with \(field)")
        }
    }

    @Test("a line break in a value never adds a field; the hook cannot change a condition its caller set")
    func smuggled() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let route = ["/api/v1/shelf/1": RecordingListener.Canned(200, Peer.json, #"{"id":1,"title":"Dune"}"#)]
        let (smuggler, smuggled, server) = try client(home, route) { request in
            request.headers["Accept-Language"] = "en\r\nHost: other.internal"
        }
        let (plain, plainListener, _) = try client(home, route)
        let (meddler, meddled, _) = try client(home, route) { request in request.headers["If-None-Match"] = "\"v9\"" }
        let attempts: [(HomeportClient, RecordingListener, [String: String])] = [
            (smuggler, smuggled, [:]), (plain, plainListener, ["Accept-Language": "en\nX-Session-Token: stolen"]),
            (plain, plainListener, ["If-None-Match": "\"v1\"\u{0}"]), (meddler, meddled, ["If-None-Match": "\"v1\""]),
        ]
        for (client, listener, headers) in attempts {
            await #expect {
                _ = try await client.send("GET", "/api/v1/shelf/1", to: server.key, headers: headers, as: Shelf.self)
            } throws: { error in
                guard case ClientError.invalidInput = error else { return false }
                return true
            }
            #expect(!listener.requests.contains { $0.contains("/api/v1/shelf") }, "nothing was sent: \(headers)")
        }
    }
}
