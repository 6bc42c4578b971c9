import Foundation
import HomeportCommandLine
import HomeportServer
import HomeportTestSupport
import Testing

@testable import HomeportGateway

@Suite(
    "A switch a service's settings file can set: its variable says 1 or 0, anything else is refused", .tags(.process))
struct FlagEnvironmentTests {
    private static let spec = CommandSpec(
        name: "test", summary: "A command with two switches.", arguments: [],
        options: [
            .flag("with", help: "A switch with a variable.", environment: "TEST_WITH"),
            .flag("bare", help: "One without."),
        ])

    private func flag(_ name: String, _ arguments: [String] = [], _ environment: [String: String]) throws -> Bool {
        try Self.spec.parse(arguments).flag(name, spec: Self.spec, environment: environment)
    }

    @Test("On the command line it is on whatever the variable says; else the variable's word decides, in any case")
    func words() throws {
        for value in ["1", "true", "TRUE", "yes", "On"] {
            #expect(try flag("with", [], ["TEST_WITH": value]), "\(value)")
        }
        for value in ["0", "false", "No", "off", ""] {
            #expect(try !flag("with", [], ["TEST_WITH": value]), "\(value)")
            #expect(try flag("with", ["--with"], ["TEST_WITH": value]), "\(value): the command line wins")
        }
        #expect(try !flag("with", [], [:]))
        // A switch without a variable is not read from one of its name.
        #expect(try !flag("bare", [], ["TEST_BARE": "1", "TEST_WITH": "1"]))
    }

    @Test("A word that is neither is a usage error naming the variable and the switch, not a guess")
    func refused() {
        for value in ["2", "enabled", "y e s", " 1", "tru", String(repeating: "x", count: 300)] {
            let error = #expect(throws: UsageError.self) { try flag("with", [], ["TEST_WITH": value]) }
            let text = error.map(String.init(describing:)) ?? ""
            #expect(text.contains("TEST_WITH") && text.contains("--with") && text.count < 250, "\(text)")
        }
    }

    @Test("serve says at start when the private-endpoints switch is on without Web Push, where it does nothing")
    func switchWithoutWebPush() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let warning = "--webpush-allow-private-endpoints does nothing here"
        func warned(_ arguments: [String], _ environment: [String: String] = [:]) throws -> Bool {
            let server = try ServerProcess(
                serve: ["--database", "sqlite:" + data.file("h.sqlite"), "--outbox", data.file("outbox")] + arguments,
                environment: environment)
            defer { _ = server.stop() }
            return server.standardError.contains(warning)
        }
        #expect(try warned(["--webpush-allow-private-endpoints"]))
        #expect(try warned([], ["HOMEPORT_WEBPUSH_ALLOW_PRIVATE_ENDPOINTS": "1"]))
        #expect(try !warned([]))
        let vapid = [
            "--vapid-key-file", data.file("vapid.pem"), "--vapid-subject", "mailto:push@example.net",
            "--webpush-allow-private-endpoints",
        ]
        #expect(try !warned(vapid), "with Web Push the switch does its work")
        // A bad word is refused before the database is touched, with Web Push or without.
        let untouched = data.file("untouched.sqlite")
        let refused = try ServerProcess.run(
            ["serve", "--listen", "127.0.0.1:0", "--database", "sqlite:" + untouched],
            environment: ["HOMEPORT_WEBPUSH_ALLOW_PRIVATE_ENDPOINTS": "enabled"], timeout: 20)
        #expect(
            refused.status == 2 && refused.error.contains("HOMEPORT_WEBPUSH_ALLOW_PRIVATE_ENDPOINTS"),
            "\(refused.error)")
        #expect(!FileManager.default.fileExists(atPath: untouched), "nothing was made or migrated")
    }

    @Test(
        "HOMEPORT_WEBPUSH_ALLOW_PRIVATE_ENDPOINTS switches serve's Web Push switch; gateway serve's has a variable of its own"
    )
    func webPushSwitch() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let spec = CommandSpec(name: "serve", summary: "Web Push.", options: PushOptions.webPush)
        let parsed = try spec.parse([
            "--vapid-key-file", directory.file("vapid.pem"), "--vapid-subject", "mailto:push@example.net",
        ])
        let variable = "HOMEPORT_WEBPUSH_ALLOW_PRIVATE_ENDPOINTS"
        #expect(try PushOptions.webPush(parsed, spec, [variable: "1"])?.allowPrivateEndpoints == true)
        #expect(try PushOptions.webPush(parsed, spec, [variable: "off"])?.allowPrivateEndpoints == false)
        #expect(try PushOptions.webPush(parsed, spec, [:])?.allowPrivateEndpoints == false)
        #expect(throws: UsageError.self) { try PushOptions.webPush(parsed, spec, [variable: "private"]) }
        // A gateway reads its own variable: a server's, in a shared environment, leaves it closed.
        let gateway = GatewayCommand.serveSpec
        let forGateway = try gateway.parse([
            "--vapid-key-file", directory.file("vapid.pem"), "--vapid-subject", "mailto:push@example.net",
        ])
        #expect(try PushOptions.webPush(forGateway, gateway, [variable: "1"])?.allowPrivateEndpoints == false)
        #expect(
            try PushOptions.webPush(forGateway, gateway, ["HOMEPORT_GATEWAY_WEBPUSH_ALLOW_PRIVATE_ENDPOINTS": "1"])?
                .allowPrivateEndpoints == true)
        // Its word is checked even without Web Push, as serve's is, before anything is made.
        let apnsKey = directory.file("apns.p8")
        let made = try ServerProcess.runProgram(
            "/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", apnsKey])
        #expect(made.status == 0, "\(made.error)")
        let untouched = directory.file("gateway.sqlite")
        let refused = try ServerProcess.run(
            [
                "gateway", "serve", "--listen", "127.0.0.1:0", "--database", "sqlite:" + untouched, "--apns-topic",
                "net.example.books", "--apns-key-file", apnsKey, "--apns-key-id", "ABCDEFGHIJ", "--apns-team-id",
                "ABCDEFGHIJ",
            ], environment: ["HOMEPORT_GATEWAY_WEBPUSH_ALLOW_PRIVATE_ENDPOINTS": "maybe"], timeout: 20)
        #expect(
            refused.status == 2 && refused.error.contains("HOMEPORT_GATEWAY_WEBPUSH_ALLOW_PRIVATE_ENDPOINTS"),
            "\(refused.error)")
        #expect(!FileManager.default.fileExists(atPath: untouched), "nothing was made")
    }
}
