import Foundation
import HomeportServer
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("homeport-server gateway: enrol, serve, push, revoke, as an operator would", .tags(.process, .interop))
struct PushGatewayCommandTests {
    @Test("a server enrolled from its own address pushes through a gateway process; revoked, it is cut off")
    func operatorFlow() throws {
        let standIn = try APNsStandIn()
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let serverDatabase = "sqlite:" + data.file("server.sqlite")
        let gatewayDatabase = "sqlite:" + data.file("gateway.sqlite")
        let gateway = try ServerProcess(
            command: ["gateway", "serve"],
            serve: [
                "--database", gatewayDatabase,
            ] + standIn.serverArguments)
        #expect(gateway.banner.contains("homeport-server gateway listening on http://127.0.0.1:"))
        // The server's operator starts it with the gateway: its credential file is made (0600).
        let serving = [
            "--database", serverDatabase, "--signup", "open", "--password-iterations", "1000", "--apns-topic",
            APNsStandIn.topic, "--push-gateway", "http://127.0.0.1:\(gateway.port)",
            "--push-gateway-credential-file", data.file("credential"),
        ]
        let server = try ServerProcess(serve: serving)
        let credential = try String(contentsOfFile: data.file("credential"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let mode = try FileManager.default.attributesOfItem(atPath: data.file("credential"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(credential.count == 43)
        let instance = try ServerProcessTests.identity(server.port)

        // The gateway's operator enrolls it from its address; a wrong expected id stops it.
        let url = "http://127.0.0.1:\(server.port)"
        let wrong = try ServerProcess.run([
            "gateway", "servers", "add", "--url", url, "--name", "home", "--instance-id", UUID().uuidString,
            "--database", gatewayDatabase,
        ])
        #expect(wrong.status == 1)
        #expect(wrong.error.contains("not enrolled"), "\(wrong.error)")
        let added = try ServerProcess.run([
            "gateway", "servers", "add", "--url", url, "--name", "home", "--instance-id", instance.uppercased(),
            "--database", gatewayDatabase,
        ])
        #expect(added.status == 0, "\(added.error)")
        #expect(added.output.contains("home: enrolled as \(instance) from \(url)"))
        #expect(!added.output.contains(credential) && !added.error.contains(credential))

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
        #expect(servers.first?["url"] as? String == url)
        #expect(servers.first?["devices"] as? Int == 1)
        #expect(servers.first?["delivered"] as? Int == 1)

        // A copy of the server (the same installation id, another credential) cannot be enrolled
        // beside it. (Copied with its secrets key, which seals the installation key.)
        for suffix in ["", "-wal", "-shm", ".secrets-key"]
        where FileManager.default.fileExists(atPath: data.file("server.sqlite" + suffix)) {
            try FileManager.default.copyItem(
                atPath: data.file("server.sqlite" + suffix), toPath: data.file("copy.sqlite" + suffix))
        }
        let copy = try ServerProcess(
            serve: [
                "--database", "sqlite:" + data.file("copy.sqlite"), "--apns-topic", APNsStandIn.topic, "--push-gateway",
                "http://127.0.0.1:\(gateway.port)", "--push-gateway-credential-file", data.file("copy-credential"),
            ])
        #expect(try ServerProcessTests.identity(copy.port) == instance)
        let claimed = try ServerProcess.run([
            "gateway", "servers", "add", "--url", "http://127.0.0.1:\(copy.port)", "--name", "copy", "--database",
            gatewayDatabase,
        ])
        #expect(claimed.status == 1)
        #expect(claimed.error.contains("is enrolled already, as 'home'"), "\(claimed.error)")
        #expect(copy.stop() == 0)

        #expect(
            try ServerProcess.run(["gateway", "servers", "revoke", "home", "--database", gatewayDatabase]).status == 0)
        #expect(try ServerProcess.run(send).status == 0)
        // The server keeps the push and says why; nothing more reaches Apple.
        let waiting = server.standardError(within: 10) { $0.contains("push gateway refused the request") }
        #expect(waiting.contains("push gateway refused the request"), "\(waiting.suffix(2000))")
        #expect(!waiting.contains(credential), "the server never logs its credential")
        #expect(standIn.requests().count == 1)
        #expect(server.stop() == 0)
        #expect(gateway.stop() == 0)
    }

    @Test("a gateway process with the app's FCM account and VAPID key carries a server's Android and browser pushes")
    func otherKinds() throws {
        let apns = try APNsStandIn()
        let fcm = try FCMStandIn()
        let service = try WebPushStandIn()
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let gatewayDatabase = "sqlite:" + data.file("gateway.sqlite")
        // The app's developer makes the VAPID key, and tells servers its public half.
        let printed = try ServerProcess.run(["push", "vapid-key", "--vapid-key-file", data.file("vapid.pem")])
        #expect(printed.status == 0, "\(printed.error)")
        let key = printed.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let gateway = try ServerProcess(
            command: ["gateway", "serve"],
            serve: [
                "--database", gatewayDatabase,
            ] + apns.serverArguments + [
                "--fcm-service-account-file", fcm.serviceAccountFile,
                "--fcm-base-url", fcm.url, "--vapid-key-file", data.file("vapid.pem"), "--vapid-subject",
                "mailto:push@example.net", "--webpush-allow-private-endpoints",
            ])
        let serving = [
            "--database", "sqlite:" + data.file("server.sqlite"), "--signup", "open", "--password-iterations", "1000",
            "--apns-topic", APNsStandIn.topic, "--push-gateway", "http://127.0.0.1:\(gateway.port)",
            "--push-gateway-credential-file", data.file("credential"), "--push-gateway-webpush-key", key,
            "--push-gateway-fcm-project", "homeport-test", "--webpush-allow-private-endpoints",
        ]
        // Web Pushes go one way: through the gateway, or with the server's own key.
        let both = try ServerProcess.run(
            ["serve"] + serving + ["--vapid-key-file", data.file("own.pem"), "--vapid-subject", "mailto:a@example.net"])
        #expect(both.status == 2 && both.error.contains("not both"), "\(both.error)")
        let server = try ServerProcess(serve: serving)
        let instance = try ServerProcessTests.identity(server.port)
        let added = try ServerProcess.run([
            "gateway", "servers", "add", "--url", "http://127.0.0.1:\(server.port)", "--name", "home",
            "--database", gatewayDatabase,
        ])
        #expect(added.status == 0, "\(added.error)")

        let signup = try RawHTTP.request(
            port: server.port, method: "POST", path: "/_allauth/app/v1/auth/signup",
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        let token = try #require((signup.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String)
        let served = try RawHTTP.request(
            port: server.port, path: "/api/v1/push/webpush-key", headers: [("X-Session-Token", token)])
        #expect(served.jsonObject?["publicKey"] as? String == key, "the app subscribes with the gateway's key")
        let subscription = try service.subscribe()
        let android = "fcm1Xk3:APA91b" + String(repeating: "Hq7-_zK", count: 20)
        for body in [
            #"{"provider":"fcm","token":"\#(android)"}"#,
            #"{"provider":"webpush","endpoint":"\#(subscription.endpoint)","keys":{"p256dh":"\#(subscription.p256dh)","auth":"\#(subscription.auth)"}}"#,
        ] {
            let registered = try RawHTTP.request(
                port: server.port, method: "POST", path: "/api/v1/push/devices",
                headers: [("Content-Type", "application/json"), ("X-Session-Token", token)], body: Data(body.utf8))
            #expect(registered.status == 200, "\(registered.text)")
        }
        let send = try ServerProcess.run([
            "push", "send", "--database", "sqlite:" + data.file("server.sqlite"), "--email", "ada@example.com",
            "--code", "homeport/core:push.test", "--title", "Through the gateway",
        ])
        #expect(send.status == 0, "\(send.error)")
        #expect(try eventually(timeout: .seconds(30)) { try fcm.messages().delivered.count == 1 })
        #expect(try fcm.messages().delivered.first?.data["s"] == instance)
        #expect(try eventually(timeout: .seconds(30)) { try service.messages().delivered.count == 1 })
        let message = try #require(try service.messages().delivered.first)
        #expect((message.payload["homeport"] as? [String: Any])?["s"] as? String == instance)
        #expect(message.key == key)
        #expect(apns.requests().isEmpty, "the account has no Apple device")
        #expect(!server.standardError.contains(subscription.endpoint) && !gateway.standardError.contains(android))
        #expect(server.stop() == 0)
        #expect(gateway.stop() == 0)
    }

    @Test("a server without a gateway, or a credential file others may read, is refused with the reason")
    func enrolmentRefusals() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let plain = try ServerProcess(serve: ["--database", "sqlite:" + data.file("plain.sqlite")])
        let refused = try ServerProcess.run([
            "gateway", "servers", "add", "--url", "http://127.0.0.1:\(plain.port)", "--name", "plain", "--database",
            "sqlite:" + data.file("gateway.sqlite"),
        ])
        #expect(refused.status == 1)
        #expect(refused.error.contains("does not push through a gateway"), "\(refused.error)")
        #expect(plain.stop() == 0)
        let html = try RecordingListener(
            behaviour: .respond(status: 200, headers: ["Content-Type": "text/html"], body: "<html>"))
        let garbage = try ServerProcess.run([
            "gateway", "servers", "add", "--url", html.url, "--name", "html", "--database",
            "sqlite:" + data.file("gateway.sqlite"),
        ])
        #expect(garbage.status == 1)
        #expect(garbage.error.contains("did not answer a Homeport server's identity route"), "\(garbage.error)")
        _ = FileManager.default.createFile(
            atPath: data.file("open-credential"), contents: Data("x".utf8), attributes: [.posixPermissions: 0o644])
        let open = try ServerProcess.run([
            "serve", "--database", "sqlite:" + data.file("s.sqlite"), "--apns-topic", "net.example.books",
            "--push-gateway", "https://gw.example.net", "--push-gateway-credential-file", data.file("open-credential"),
        ])
        #expect(open.status == 2)
        #expect(open.error.contains("may be read by others"), "\(open.error)")
    }

    @Test(
        "bad gateway flags are refused with a message and exit 2",
        arguments: [
            (["serve", "--push-gateway", "http://example.net", "--apns-topic", "a.b"], "http:// on a loopback"),
            (["serve", "--push-gateway", "ftp://127.0.0.1", "--apns-topic", "a.b"], "https://"),
            (["serve", "--push-gateway", "https://gw.example.net"], "--push-gateway-credential-file"),
            (["serve", "--push-gateway-credential-file", "/etc/hostname"], "need --push-gateway"),
            (["serve", "--push-gateway-webpush-key", "BKey"], "need --push-gateway"),
            (["serve", "--push-gateway-fcm-project", "books-app"], "need --push-gateway"),
            (
                ["serve", "--push-gateway", "https://gw.example.net", "--push-gateway-webpush-key", "not-a-key"],
                "VAPID public key"
            ),
            (
                [
                    "serve", "--push-gateway", "https://gw.example.net", "--push-gateway-webpush-key",
                    // 65 bytes, but not a point on P-256.
                    "BA" + String(repeating: "A", count: 85),
                ], "VAPID public key"
            ),
            (
                ["serve", "--push-gateway", "https://gw.example.net", "--push-gateway-fcm-project", "Books/App"],
                "Firebase project id"
            ),
            (
                [
                    "serve", "--push-gateway", "https://gw.example.net", "--push-gateway-credential-file",
                    "/etc/hostname",
                ], "--apns-topic"
            ),
            (["gateway", "servers", "add", "--name", "x"], "--url"),
            (["gateway", "servers", "add", "--url", "http://books.example.net", "--name", "x"], "--url must be"),
            (
                [
                    "gateway", "servers", "add", "--url", "https://b.example.net", "--name", "x", "--instance-id",
                    "nope",
                ],
                "--instance-id must be a UUID"
            ),
            (
                ["gateway", "servers", "add", "--url", "https://b.example.net", "--name", "Not Allowed"],
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

    @Test(
        "the gateway is homeport-server's: its overview lists it; a product's command line, which does not add it, has none"
    )
    func onlyWhereAdded() throws {
        let overview = try ServerProcess.run(["--help"])
        #expect(overview.status == 0 && overview.output.contains("gateway serve     Run a push gateway"))
        #expect(overview.output.contains("gateway servers   Enroll, list or revoke"))
        // In this process nothing added the command: as in a product's executable.
        let product = Product(name: "shelf", version: "1")
        #expect(ServerCommandLine.run(["gateway", "--help"], environment: [:], product: product) == 2)
    }
}
