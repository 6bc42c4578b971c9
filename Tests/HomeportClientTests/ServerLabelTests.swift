import Foundation
import HomeportClient
import HomeportTestSupport
import Testing

/// A label per server (seed 002: the server's key "also labels it in a switcher"): the person
/// names a server once, and every command shows the name and takes it.
@Suite("Server labels", .tags(.process))
struct ServerLabelTests {
    @Test("a server named on this device is shown by name, found by name in any case, and keeps it through a sign-in")
    func rename() throws {
        let installation = try Installation(hosts: ["127.0.0.1"])
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        func run(_ arguments: [String], input: String = "") throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.runClient(arguments, environment: environment, input: input)
        }
        let url = try installation.address("127.0.0.1").url
        #expect(try signUpWithCommandLine(url, environment: environment).status == 0)
        let key = try #require(try ServerDirectory(directory: home.path).all.first?.key)

        let renamed = try run(["servers", "rename", key, "Books at home"])
        #expect(renamed.status == 0, "\(renamed.error)")
        #expect(try ServerDirectory(directory: home.path).server(key)?.label == "Books at home")
        let listed = try run(["servers", "--json"])
        let entry = ((try JSONSerialization.jsonObject(with: Data(listed.output.utf8))) as? [[String: Any]])?.first
        #expect(entry?["label"] as? String == "Books at home")

        let whoami = try run(["whoami", "books AT home"])
        #expect(whoami.status == 0, "\(whoami.error)")
        #expect(whoami.output.contains("(Books at home (\(key)))"), "\(whoami.output)")

        let again = try run(
            ["login", url, "--email", "ada@example.com", "--password-stdin", "--allow-http"], input: password + "\n")
        #expect(again.status == 0, "\(again.error)")
        #expect(again.output.contains("Books at home (\(key))"), "\(again.output)")
        #expect(try ServerDirectory(directory: home.path).server(key)?.label == "Books at home")

        let cleared = try run(["servers", "rename", "Books at home", ""])
        #expect(cleared.status == 0, "\(cleared.error)")
        #expect(try ServerDirectory(directory: home.path).server(key)?.label == nil)
    }

    @Test(
        "a label with controls or a bidirectional override, one too long, or one another server has is refused and changes nothing",
        arguments: ["Books\u{202E}emoh", "Books\u{7F}", "Books\nat home", String(repeating: "b", count: 65), "Music"])
    func refused(label: String) throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let directory = try ServerDirectory(directory: home.path)
        let books = try record(InstanceID(UUID()), primary: "https://books.example.net")
        var music = try record(InstanceID(UUID()), primary: "https://music.example.net")
        music.label = "music"
        try directory.save(books)
        try directory.save(music)
        let run = try ServerProcess.runClient(
            ["servers", "rename", books.key, label], environment: ["HOMEPORT_HOME": home.path])
        #expect(run.status != 0)
        #expect(run.error.contains("label") || run.error.contains("named"), "\(run.error)")
        #expect(try ServerDirectory(directory: home.path).server(books.key)?.label == nil)
        #expect(try ServerDirectory(directory: home.path).server(music.key)?.label == "music")
    }
}
