import Foundation
import HomeportClient
import HomeportTestSupport
import Testing

@Suite("homeport api: any route of a server's API from the shell, with the session and its rules", .tags(.process))
struct ApiCommandTests {
    @Test("calls a route through the chosen address; exit codes tell a 4xx, a refusal and a sign-out apart")
    func calls() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        // No session cache: a session the other process ends is refused at once.
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"], extra: ["--session-cache-seconds", "0"])
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        #expect(try signUpWithCommandLine(try mine.address("127.0.0.1").url, environment: environment).status == 0)
        let servers = try ServerProcess.runClient(["servers", "--json"], environment: environment)
        let list = try JSONSerialization.jsonObject(with: Data(servers.output.utf8)) as? [[String: Any]]
        let id = try #require(list?.first?["server"] as? String)
        let prefix = String(id.prefix(8))
        let add = try ServerProcess.runClient(
            ["address", "add", prefix, try mine.address("127.0.0.2").url, "--allow-http"], environment: environment)
        #expect(add.status == 0, "\(add.error)")

        func api(_ arguments: String...) throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.runClient(["api", prefix] + arguments, environment: environment)
        }
        let info = try api("/api/v1/app-info")
        #expect(info.status == 0, "\(info.error)")
        #expect(info.output.contains("\"instanceId\" : \"\(id)\""))
        let test = try api("POST", "/api/v1/push/test", "--json")
        let answer = try JSONSerialization.jsonObject(with: Data(test.output.utf8)) as? [String: Any]
        #expect(test.status == 0 && answer?["status"] as? Int == 202 && answer?["method"] as? String == "POST")
        let missing = try api("GET", "/api/v1/nothing-here")
        #expect(missing.status == 5)
        #expect(missing.output.contains("not_found"))
        let wrongMethod = try api("delete", "/api/v1/app-info")
        #expect(wrongMethod.status == 5, "405 is a 4xx")

        // Nothing is sent for a command line that is wrong.
        for (arguments, message) in [
            (["PATCHY", "/api/v1/app-info"], "not a method"), (["//evil.example/x"], "single /"),
            (["api/v1/app-info"], "single /"), (["GET", "/api/v1/app-info", "--data", "{}"], "sends no body"),
            (["POST", "/api/v1/books", "--data", "{not json"], "not JSON"), ([String](), "takes SERVER"),
        ] {
            let refused = try ServerProcess.runClient(["api", prefix] + arguments, environment: environment)
            #expect(refused.status == 2, "\(arguments)")
            #expect(refused.error.contains(message), "\(arguments): \(refused.error)")
        }

        // The home address goes away: the verified alternative answers.
        mine.stop("127.0.0.1")
        let failover = try api("/api/v1/app-info", "--json")
        let via = try JSONSerialization.jsonObject(with: Data(failover.output.utf8)) as? [String: Any]
        let alternative = try mine.address("127.0.0.2").url
        #expect(failover.status == 0 && via?["via"] as? String == alternative)

        // The server ends the session: the API's own refusal signs the device out (exit 4).
        let hold = try ServerProcess.run(["users", "hold", "ada@example.com", "--database", mine.database])
        #expect(hold.status == 0)
        let refused = try api("/api/v1/app-info")
        #expect(refused.status == 4, "\(refused.error)")
        #expect(try api("/api/v1/app-info").status == 4)
    }

    @Test("a web page where the API should answer is not the API: exit 3, the session kept")
    func htmlProxy() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let id = InstanceID(UUID())
        let proxy = try RecordingListener(
            behaviour: .routes([
                "GET /api/v1/server-identity": Peer.identity(id),
                "GET /api/v1/books": .init(200, ["Content-Type": "text/html"], "<html><form>Sign in</form></html>"),
            ]))
        try ServerDirectory(directory: home.path).save(try record(id, primary: proxy.url))
        try FileVault(directory: home.file("vault")).store(token: "t0ken", for: id.description)
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        let answer = try ServerProcess.runClient(["api", id.description, "/api/v1/books"], environment: environment)
        #expect(answer.status == 3, "\(answer.error)")
        #expect(answer.error.contains("web page") || answer.error.contains("HTML"), "\(answer.error)")
        #expect(try FileVault(directory: home.file("vault")).token(for: id.description) == "t0ken")
    }
}
