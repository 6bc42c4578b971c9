import Foundation
import HomeportTestSupport
import Testing

/// Finishing a reset from the app (`homeport password reset URL --key`) and deleting the account
/// (`homeport account delete`), as a person runs them.
@Suite("The homeport command line: finishing a reset, deleting the account", .tags(.process))
struct AccountCommandLineTests {
    func json(_ run: (status: Int32, output: String, error: String)) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
    }

    /// The reset key of the newest reset mail in `outbox`, once one is there.
    func mailedKey(_ outbox: String) -> String? {
        var key: String?
        eventually(timeout: .seconds(5), every: .milliseconds(50)) {
            key = mailText(in: outbox).matches(of: /key: ([A-Za-z0-9_-]{43})/).last.map { String($0.output.1) }
            return key != nil
        }
        return key
    }

    @Test(
        "a mailed key sets a new password from the command line (every session ends); a wrong key changes nothing; the account deletes after its password, and the device forgets the server"
    )
    func resetThenDelete() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1"])
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        func run(_ arguments: [String], input: String = "") throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.runClient(arguments, environment: environment, input: input)
        }
        let primary = try mine.address("127.0.0.1").url
        #expect(try signUpWithCommandLine(primary, environment: environment).status == 0)
        let server = try #require(
            (try JSONSerialization.jsonObject(with: Data(try run(["servers", "--json"]).output.utf8))
                as? [[String: Any]])?
                .first?["server"] as? String)

        #expect(try run(["password", "reset", primary, "--email", "ada@example.com", "--allow-http"]).status == 0)
        let key = try #require(mailedKey(mine.directory.file("outbox")))
        // Another first character (a key that starts with "x" already is one in 64).
        let wrongReset = (key.first == "x" ? "y" : "x") + key.dropFirst()
        let wrongKey = try run(
            ["password", "reset", primary, "--key", wrongReset, "--password-stdin", "--allow-http"],
            input: "a brand new password\n")
        #expect(wrongKey.status == 1 && wrongKey.error.contains("reset token was invalid"), "\(wrongKey.error)")
        #expect(try run(["whoami", server]).status == 0, "a wrong key changed nothing")
        let short = try run(
            ["password", "reset", primary, "--key", key, "--password-stdin", "--allow-http"], input: "short\n")
        #expect(short.status == 1 && short.error.contains("too short"), "\(short.error)")
        let noStdin = try run(["password", "reset", primary, "--key", key, "--allow-http"])
        #expect(noStdin.status == 2)
        // The key from standard input, then the password.
        let reset = try run(
            ["password", "reset", primary, "--key", "-", "--password-stdin", "--allow-http", "--json"],
            input: key + "\na brand new password\n")
        #expect(reset.status == 0 && (try? json(reset))?["reset"] as? Bool == true, "\(reset.error)")
        #expect(try run(["whoami", server]).status == 4, "every session ended, this device's too")
        #expect(
            try run(
                ["login", primary, "--email", "ada@example.com", "--password-stdin", "--allow-http"],
                input: "a brand new password\n"
            ).status == 0)

        let wrong = try run(["account", "delete", server, "--password-stdin"], input: "correct horse battery\n")
        #expect(wrong.status == 1 && wrong.error.contains("Incorrect password"), "\(wrong.error)")
        #expect(try run(["whoami", server]).status == 0, "nothing changed, on either side")
        #expect(try run(["account", "delete", server]).status == 2, "the password comes from standard input only")
        let deleted = try run(
            ["account", "delete", server, "--password-stdin", "--json"], input: "a brand new password\n")
        #expect(deleted.status == 0 && (try? json(deleted))?["deleted"] as? Bool == true, "\(deleted.error)")
        let servers = try JSONSerialization.jsonObject(with: Data(try run(["servers", "--json"]).output.utf8))
        #expect((servers as? [Any])?.isEmpty == true, "the device forgot the server")
        let accounts = try ServerProcess.run(["users", "list", "--json", "--database", mine.database])
        #expect(
            (try JSONSerialization.jsonObject(with: Data(accounts.output.utf8)) as? [Any])?.isEmpty == true,
            "\(accounts.output)")
        #expect(try signUpWithCommandLine(primary, environment: environment).status == 0, "the address is free again")
    }
}
