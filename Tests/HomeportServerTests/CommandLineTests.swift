import Foundation
import HomeportTestSupport
import Testing

@Suite("homeport-server command line")
struct CommandLineTests {
    @Test(
        "--help explains every command and exits 0",
        arguments: [
            ["--help"], ["serve", "--help"], ["migrate", "--help"], ["identity", "show", "--help"],
            ["identity", "reset", "--help"], ["identity", "--help"],
        ])
    func help(arguments: [String]) throws {
        let result = try ServerProcess.run(arguments)
        #expect(result.status == 0)
        #expect(result.output.contains("Usage: homeport-server"))
        #expect(result.error.isEmpty)
    }

    @Test("serve --help names every option with its environment variable")
    func serveHelpListsEnvironment() throws {
        let help = try ServerProcess.run(["serve", "--help"]).output
        for name in ["--listen", "--database", "--product", "HOMEPORT_LISTEN", "HOMEPORT_DATABASE", "HOMEPORT_PRODUCT"]
        {
            #expect(help.contains(name), "\(name)")
        }
    }

    @Test(
        "a bad command line exits 2 with a message and starts nothing",
        arguments: [
            (["frobnicate"], "unknown command"),
            (["serve", "--listen", "nonsense"], "not a listen address"),
            (["serve", "--database", "mysql://u:pw@h/db"], "sqlite:PATH"),
            (["serve", "--product", "has spaces"], "not a product name"),
            (["serve", "--workers", "zero"], "--workers must be a whole number"),
            (["serve", "--bogus"], "unknown option '--bogus'"),
            (["serve", "--listen"], "--listen needs a value"),
            (["identity"], "identity needs an action"),
            (["identity", "explode"], "unknown identity action"),
            (["migrate", "extra"], "takes no arguments"),
        ])
    func usageErrors(arguments: [String], message: String) throws {
        let result = try ServerProcess.run(arguments)
        #expect(result.status == 2)
        #expect(result.error.contains(message), "\(result.error)")
        #expect(!result.error.contains("pw@"), "a password never appears in a message")
    }

    @Test("the environment configures serve when flags are absent")
    func environmentConfiguration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(
            serve: [],
            environment: [
                "HOMEPORT_LISTEN": "127.0.0.1:0", "HOMEPORT_DATABASE": "sqlite:" + directory.file("env.sqlite"),
                "HOMEPORT_PRODUCT": "familyhub",
            ])
        let response = try RawHTTP.request(port: server.port, path: "/api/v1/server-identity")
        #expect(response.jsonObject?["product"] as? String == "familyhub")
        #expect(FileManager.default.fileExists(atPath: directory.file("env.sqlite")))
        #expect(server.stop() == 0)
    }

    @Test("without --database the server uses SQLite in the data directory")
    func defaultDatabase() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try ServerProcess(serve: [], environment: ["HOMEPORT_DATA_DIR": directory.file("data")])
        #expect(server.banner.contains("sqlite:\(directory.file("data"))/homeport.sqlite"))
        #expect(FileManager.default.fileExists(atPath: directory.file("data/homeport.sqlite")))
        #expect(server.stop() == 0)
    }

    @Test("a port in use fails at start with exit 1 and says so")
    func portInUse() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = "sqlite:" + directory.file("h.sqlite")
        let server = try ServerProcess(serve: ["--database", database])
        let result = try ServerProcess.run(["serve", "--listen", "127.0.0.1:\(server.port)", "--database", database])
        #expect(result.status == 1)
        #expect(result.error.contains("cannot listen on 127.0.0.1:\(server.port)"))
        #expect(server.stop() == 0)
    }

    @Test("migrate applies once and then reports up to date", arguments: Backend.allCases)
    func migrate(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let first = try ServerProcess.run(["migrate", "--database", url.rawText])
        #expect(first.status == 0)
        #expect(first.output.contains("applied 1"))
        let second = try ServerProcess.run(["migrate", "--database", url.rawText])
        #expect(second.status == 0)
        #expect(second.output.contains("up to date"))
    }

    @Test(
        "identity show prints the id the route answers; reset refuses without confirmation", arguments: Backend.allCases
    )
    func identityCommands(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let before = try ServerProcess.run(["identity", "show", "--database", url.rawText])
        #expect(before.status == 0)
        #expect(before.output.contains("none yet"))

        let server = try ServerProcess(serve: ["--database", url.rawText])
        let id = try ServerProcessTests.identity(server.port)
        #expect(server.stop() == 0)

        let shown = try ServerProcess.run(["identity", "show", "--database", url.rawText])
        #expect(shown.output.trimmingCharacters(in: .whitespacesAndNewlines) == id)
        let json = try ServerProcess.run(["identity", "show", "--json", "--database", url.rawText])
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect(object?["instanceId"] as? String == id)

        let refused = try ServerProcess.run(["identity", "reset", "--database", url.rawText])
        #expect(refused.status == 3)
        #expect(refused.error.contains("--replicas-stopped"))
        #expect(refused.error.contains("Nothing was changed"))
        let unchanged = try ServerProcess.run(["identity", "show", "--database", url.rawText])
        #expect(unchanged.output.contains(id))

        let reset = try ServerProcess.run(["identity", "reset", "--replicas-stopped", "--database", url.rawText])
        #expect(reset.status == 0)
        #expect(reset.output.contains("Removed instanceId \(id)"))
        #expect(reset.output.contains("verify every alternative address again"))

        let restarted = try ServerProcess(serve: ["--database", url.rawText])
        let fresh = try ServerProcessTests.identity(restarted.port)
        #expect(fresh != id)
        #expect(restarted.stop() == 0)
    }
}
