import Foundation
import HomeportTestSupport
import Testing

/// `--json` on every command that prints a result, and the password commands.
@Suite("The homeport command line: JSON results and passwords", .tags(.process))
struct CommandLineJSONTests {
    func json(_ run: (status: Int32, output: String, error: String)) throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any], "\(run.output)\(run.error)"
        )
    }

    @Test("every command prints JSON with --json; password change renews the session; password reset asks for a mail")
    func jsonEverywhere() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        func run(_ arguments: [String], input: String = "") throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.runClient(arguments, environment: environment, input: input)
        }
        let primary = try mine.address("127.0.0.1").url
        let second = try mine.address("127.0.0.2").url

        let login = try json(try signUpWithCommandLine(primary, environment: environment, extra: ["--json"]))
        #expect(login["signedIn"] as? Bool == true)
        let server = try #require(login["server"] as? String)
        #expect(login["primary"] as? String == primary)

        let added = try json(try run(["address", "add", server, second, "--allow-http", "--json"]))
        #expect(added["added"] as? Bool == true && added["address"] as? String == second)
        let again = try json(try run(["address", "add", server, second, "--allow-http", "--json"]))
        #expect(again["added"] as? Bool == false, "it was already there, and was probed again")
        let verified = try json(try run(["address", "verify", server, "--json"]))
        #expect((verified["addresses"] as? [[String: Any]])?.allSatisfy { $0["verified"] as? Bool == true } == true)
        let whoami = try json(try run(["whoami", server, "--json"]))
        #expect(whoami["server"] as? String == server)

        let changed = try json(
            try run(
                ["password", "change", server, "--password-stdin", "--json"],
                input: password + "\n" + "a second good password\n"))
        #expect(changed["changed"] as? Bool == true && changed["sessionRenewed"] as? Bool == true)
        #expect(try run(["whoami", server]).status == 0, "the renewed session works")
        let wrong = try run(
            ["password", "change", server, "--password-stdin"], input: "not the password\nanother good password\n")
        #expect(wrong.status == 1, "\(wrong.error)")

        let relogin = try json(
            try run(
                ["login", primary, "--email", "ada@example.com", "--password-stdin", "--allow-http", "--json"],
                input: "a second good password\n"))
        #expect((relogin["replacedSession"] as? [String: Any])?["revoked"] as? Bool == true, "\(relogin)")

        let reset = try json(
            try run(["password", "reset", primary, "--email", "ada@example.com", "--allow-http", "--json"]))
        #expect(reset["requested"] as? Bool == true)
        let network = try json(try run(["network", "--json"]))
        #expect(network["networkPath"] as? String == "home" && network["source"] as? String == "HOMEPORT_NETWORK_PATH")
        let removed = try json(try run(["address", "remove", server, second, "--json"]))
        #expect(removed["removed"] as? String == second)
        let logout = try json(try run(["logout", server, "--json"]))
        #expect(logout["revoked"] as? Bool == true && logout["signedOut"] as? Bool == true)
        let forgotten = try json(try run(["remove", server, "--json"]))
        #expect(forgotten["removed"] as? Bool == true)
    }

    @Test("help for the new commands and flags; bad command lines exit 2")
    func helpAndUsage() throws {
        for (arguments, expected) in [
            (["password", "change", "--help"], "--password-stdin"), (["password", "reset", "--help"], "--email"),
            (["network", "--help"], "HOMEPORT_NETWORK_PATH"), (["logout", "--help"], "--json"),
            (["address", "verify", "--help"], "--proxy"), (["--help"], "password change"),
        ] {
            let result = try ServerProcess.runClient(arguments)
            #expect(result.status == 0, "\(arguments)")
            #expect(result.output.contains(expected), "\(arguments): \(result.output)")
        }
        let home = try TemporaryDirectory()
        defer { home.remove() }
        for (arguments, message) in [
            (["password"], "needs an action"), (["password", "forget", "x"], "unknown password action"),
            (["password", "change", "x"], "--password-stdin"), (["password", "reset", "https://x"], "--email"),
            (["whoami", "x", "--proxy", "not a url"], "--proxy"),
        ] {
            let result = try ServerProcess.runClient(arguments, environment: ["HOMEPORT_HOME": home.path])
            #expect(result.status == 2, "\(arguments): \(result.error)")
            #expect(result.error.contains(message), "\(arguments): \(result.error)")
        }
    }
}
