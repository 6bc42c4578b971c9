import Foundation
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("homeport-server gateway: enrol, serve, push, revoke, as an operator would")
struct PushGatewayCommandTests {
    @Test("a server enrolled by its installation id pushes through a gateway process; revoked, it is cut off")
    func operatorFlow() throws {
        let standIn = try APNsStandIn()
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let serverDatabase = "sqlite:" + data.file("server.sqlite")
        let gatewayDatabase = "sqlite:" + data.file("gateway.sqlite")
        // The server's operator reads the installation id and hands it to the gateway's operator.
        let first = try ServerProcess(serve: ["--database", serverDatabase])
        let instance = try ServerProcessTests.identity(first.port)
        #expect(first.stop() == 0)
        let added = try ServerProcess.run([
            "gateway", "servers", "add", "--instance-id", instance.uppercased(), "--name", "home", "--database",
            gatewayDatabase,
        ])
        #expect(added.status == 0, "\(added.error)")
        let credential = added.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(credential.count >= 40, "the credential is printed, alone, on standard output")
        #expect(added.error.contains("not shown again"))
        let again = try ServerProcess.run([
            "gateway", "servers", "add", "--instance-id", instance, "--name", "home", "--database", gatewayDatabase,
        ])
        #expect(again.status == 1, "a name is enrolled once")
        try credential.write(toFile: data.file("credential"), atomically: true, encoding: .utf8)

        let gateway = try ServerProcess(
            command: ["gateway", "serve"],
            serve: [
                "--database", gatewayDatabase, "--apns-topic", APNsStandIn.topic, "--apns-key-file", standIn.keyFile,
                "--apns-key-id", APNsStandIn.keyID, "--apns-team-id", APNsStandIn.teamID, "--apns-base-url",
                standIn.url, "--apns-ca-file", standIn.caFile,
            ])
        #expect(gateway.banner.contains("homeport-server gateway listening on http://127.0.0.1:"))
        let server = try ServerProcess(
            serve: [
                "--database", serverDatabase, "--signup", "open", "--password-iterations", "1000", "--apns-topic",
                APNsStandIn.topic, "--push-gateway", "http://127.0.0.1:\(gateway.port)",
                "--push-gateway-credential-file", data.file("credential"),
            ])
        let signup = try RawHTTP.request(
            port: server.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        let token = try #require((signup.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String)
        let device = String(repeating: "ab", count: 32)
        let registered = try RawHTTP.request(
            port: server.port, method: "POST", path: "/api/v1/push/devices",
            headers: [("Content-Type", "application/json"), ("X-Session-Token", token)],
            body: Data(#"{"token":"\#(device)","environment":"production"}"#.utf8))
        #expect(registered.status == 200)
        let send = [
            "push", "send", "--database", serverDatabase, "--email", "ada@example.com", "--code",
            "homeport/core:push.test", "--title", "Through the gateway",
        ]
        #expect(try ServerProcess.run(send).status == 0)
        #expect(standIn.waitForRequests(1))
        let delivered = try #require(standIn.requests().first)
        #expect(delivered["device"] as? String == device)
        #expect(((delivered["payload"] as? [String: Any])?["homeport"] as? [String: Any])?["s"] as? String == instance)

        let list = try ServerProcess.run(["gateway", "servers", "list", "--json", "--database", gatewayDatabase])
        let servers = try #require(try JSONSerialization.jsonObject(with: Data(list.output.utf8)) as? [[String: Any]])
        #expect(servers.first?["name"] as? String == "home")
        #expect(servers.first?["instanceId"] as? String == instance)
        #expect(servers.first?["devices"] as? Int == 1)
        #expect(servers.first?["delivered"] as? Int == 1)
        #expect(!list.output.contains(credential), "list never shows a credential")

        #expect(
            try ServerProcess.run(["gateway", "servers", "revoke", "home", "--database", gatewayDatabase]).status == 0)
        #expect(try ServerProcess.run(send).status == 0)
        // The server keeps the push and says why; nothing more reaches Apple.
        var waiting = ""
        for _ in 0..<200 {
            waiting = server.standardError
            if waiting.contains("push gateway refused the request") { break }
            usleep(50_000)
        }
        #expect(waiting.contains("push gateway refused the request"), "\(waiting.suffix(2000))")
        #expect(!waiting.contains(credential), "the server never logs its credential")
        #expect(standIn.requests().count == 1)
        #expect(server.stop() == 0)
        #expect(gateway.stop() == 0)
    }

    @Test(
        "bad gateway flags are refused with a message and exit 2",
        arguments: [
            (["serve", "--push-gateway", "http://example.net", "--apns-topic", "a.b"], "http:// on a loopback"),
            (["serve", "--push-gateway", "ftp://127.0.0.1", "--apns-topic", "a.b"], "https://"),
            (["serve", "--push-gateway", "https://gw.example.net"], "--push-gateway-credential-file"),
            (["serve", "--push-gateway-credential-file", "/etc/hostname"], "need --push-gateway"),
            (
                [
                    "serve", "--push-gateway", "https://gw.example.net", "--push-gateway-credential-file",
                    "/etc/hostname",
                ], "--apns-topic"
            ),
            (["gateway", "servers", "add", "--instance-id", "not-a-uuid", "--name", "x"], "--instance-id UUID"),
            (
                ["gateway", "servers", "add", "--instance-id", UUID().uuidString, "--name", "Not Allowed"],
                "a server's name"
            ),
            (["gateway", "serve", "--apns-topic", "net.example.books"], "the APNs key"),
            (["gateway", "serve"], "--apns-topic"),
            (["gateway", "launch"], "unknown gateway command"),
        ])
    func badFlags(arguments: [String], message: String) throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let result = try ServerProcess.run(arguments, environment: ["HOMEPORT_DATA_DIR": data.path])
        #expect(result.status == 2, "\(result.error)")
        #expect(result.error.contains(message), "\(result.error)")
    }

    @Test(
        "gateway --help explains each command",
        arguments: [
            ["gateway", "--help"], ["gateway", "serve", "--help"], ["gateway", "servers", "add", "--help"],
            ["gateway", "servers", "list", "--help"], ["gateway", "servers", "revoke", "--help"],
        ])
    func help(arguments: [String]) throws {
        let result = try ServerProcess.run(arguments)
        #expect(result.status == 0)
        #expect(result.output.contains("Usage: homeport-server gateway"))
    }
}
