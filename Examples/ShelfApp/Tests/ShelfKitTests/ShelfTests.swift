import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import ShelfKit
import Testing

/// Shelf's model as the person uses the app, against real `bookorbit-server` processes: a home
/// library served on two loopback addresses (the LAN one and the VPN one) on one database, and a
/// friend's library, each pushing to its own APNs stand-in.
@Suite("Shelf, the sample app: its model against real BookOrbit servers")
@MainActor
struct ShelfTests {
    static let password = "correct horse battery"

    /// `bookorbit-server`: `SHELF_BOOKORBIT_SERVER`, else the one built beside this test bundle
    /// (`scripts/test` builds both packages in one place), else Examples/BookOrbit's own build.
    nonisolated static var binary: String {
        if let given = ProcessInfo.processInfo.environment["SHELF_BOOKORBIT_SERVER"] { return given }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        while directory.path.contains(".xctest") { directory = directory.deletingLastPathComponent() }
        let beside = directory.appendingPathComponent("bookorbit-server").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../../BookOrbit/.build/debug/bookorbit-server"
        ).standardized.path
    }

    /// One BookOrbit installation: a process per host on one SQLite database.
    final class Library {
        let files: TemporaryDirectory
        let standIn: APNsStandIn
        var processes: [String: ServerProcess] = [:]

        init(hosts: [String]) throws {
            guard FileManager.default.isExecutableFile(atPath: ShelfTests.binary) else {
                throw RawHTTPError(
                    "no bookorbit-server at \(ShelfTests.binary): build it first "
                        + "(swift build --package-path Examples/BookOrbit)")
            }
            files = try TemporaryDirectory()
            standIn = try APNsStandIn()
            let serve =
                [
                    "--database", "sqlite:" + files.file("bookorbit.sqlite"), "--signup", "open",
                    "--password-iterations", "1000", "--outbox", files.file("outbox"),
                ] + standIn.serverArguments
            for host in hosts {
                processes[host] = try ServerProcess(
                    binary: ShelfTests.binary, serve: serve + ["--listen", "\(host):0"])
            }
        }

        deinit { files.remove() }

        func url(_ host: String) -> String { "http://\(host):\(processes[host]?.port ?? 0)" }
    }

    /// The app's model over a fresh state directory and file vault (the Keychain's stand-in).
    func shelf(_ files: TemporaryDirectory) throws -> Shelf {
        let client = try Shelf.makeClient(
            stateDirectory: files.file("state"), vault: try FileVault(directory: files.file("vault")))
        return Shelf(client: client, allowsPlainHTTP: true)
    }

    @Test(
        "an evening: a server previewed then joined, a second factor, a label, a failover, a loan heard on the stream, its push routed among two servers, a sign-out"
    )
    func evening() async throws {
        let home = try Library(hosts: ["127.0.0.1", "127.0.0.2"])
        let friend = try Library(hosts: ["127.0.0.3"])
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let shelf = try shelf(files)
        let following = Task { await shelf.follow() }
        defer { following.cancel() }

        // The server says who it is before anything is kept or any password typed.
        await shelf.lookUp(home.url("127.0.0.1"))
        guard case .preview(let preview) = shelf.step else {
            Issue.record("no preview: \(String(describing: shelf.notice))")
            return
        }
        #expect(preview.identity.product == "bookorbit")
        #expect(preview.enrolledAs == nil)
        #expect(shelf.servers.isEmpty, "nothing kept before the person chooses")

        await shelf.signIn(email: "ada@example.com", password: Self.password, creatingAccount: true)
        #expect(shelf.step == nil && shelf.isSignedIn && shelf.notice == nil)
        let handle = try #require(shelf.selection)
        #expect(shelf.selected?.instanceID == preview.identity.instanceId)

        // Two-factor sign-in, turned on in the account's settings (the client's calls).
        let setup = try #require(try await shelf.client.beginTOTPSetup(handle))
        _ = try await shelf.client.enableTOTP(
            handle, code: try #require(AuthenticatorApp.code(secret: setup.secret)), password: Self.password)
        await shelf.signOut()
        #expect(!shelf.isSignedIn && shelf.notice == nil)
        await shelf.signIn(email: "ada@example.com", password: Self.password)
        guard case .secondFactor = shelf.step else {
            Issue.record("no second factor asked: \(String(describing: shelf.step))")
            return
        }
        #expect(!shelf.isSignedIn)
        await shelf.submit(code: "000000")
        #expect(shelf.notice?.title.isEmpty == false, "a wrong code is told")
        guard case .secondFactor = shelf.step else {
            Issue.record("the second factor's step did not stay for another try")
            return
        }
        shelf.notice = nil
        await shelf.submit(code: try #require(AuthenticatorApp.code(secret: setup.secret, steps: 1)))
        #expect(shelf.step == nil && shelf.isSignedIn)
        #expect(shelf.selection == handle, "the server keeps its handle through every sign-in")

        // A label, and the list as the switcher shows it.
        shelf.rename(handle, to: " Home library ")
        #expect(shelf.servers.map(\.label) == ["Home library"])
        #expect(shelf.selected.map(Shelf.name(of:)) == "Home library")

        await shelf.add(title: "The Dispossessed", author: "Ursula K. Le Guin")
        #expect(shelf.books.map(\.title) == ["The Dispossessed"])
        await shelf.add(title: "   ")
        #expect(shelf.notice?.title.isEmpty == false, "the server's refusal is told")
        #expect(shelf.books.count == 1)
        shelf.notice = nil

        // The VPN address is verified before it is kept; the friend's server is not this one.
        await shelf.addAddress(home.url("127.0.0.2"))
        await shelf.addAddress(friend.url("127.0.0.3"))
        #expect(shelf.notice != nil, "another installation's address is refused")
        #expect(shelf.selected?.alternatives.map(\.address.url) == [home.url("127.0.0.2")])
        shelf.notice = nil

        await shelf.registerForPushes(token: Data(repeating: 0xab, count: 32), environment: .sandbox)
        #expect(shelf.notice == nil)

        // The LAN address goes away: the books come through the verified VPN address.
        _ = home.processes["127.0.0.1"]?.stop()
        await shelf.refresh()
        #expect(shelf.notice == nil)
        #expect(shelf.books.count == 1)
        #expect(shelf.answeringAddress == home.url("127.0.0.2"))

        // The stream, while the server is shown: a loan's readiness arrives on it, and the list
        // is read again.
        let watching = Task { await shelf.watch() }
        #expect(await eventually { () async -> Bool in shelf.streamState == "live via \(home.url("127.0.0.2"))" })
        let book = try #require(shelf.books.first)
        await shelf.lend(book)
        #expect(shelf.books.first?.loan?.state == "preparing")
        #expect(await eventually(timeout: .seconds(20)) { () async -> Bool in !shelf.feed.isEmpty })
        #expect(shelf.feed.first?.c == "bookorbit:loan.ready")
        #expect(shelf.feed.first?.s == preview.identity.instanceId)
        #expect(await eventually { () async -> Bool in shelf.books.first?.loan?.state == "ready" })
        watching.cancel()
        await watching.value

        // A second server: the friend's, joined the same way; the switcher shows both.
        await shelf.lookUp(friend.url("127.0.0.3"))
        await shelf.signIn(email: "ada@example.com", password: Self.password, creatingAccount: true)
        let friends = try #require(shelf.selection)
        #expect(friends != handle && shelf.servers.count == 2 && shelf.books.isEmpty)

        // The push the home library sent opens the home library, whichever server is shown.
        #expect(home.standIn.waitForRequests(1))
        let payload = try #require(home.standIn.requests().first?["payload"] as? [String: Any])
        let routed = await shelf.open(push: try JSONSerialization.data(withJSONObject: payload))
        #expect(routed?.server == preview.identity.instanceId.description)
        #expect(routed?.deepLink?.scheme == "bookorbit")
        #expect(shelf.selection == handle && shelf.books.map(\.title) == ["The Dispossessed"])
        // One naming a server this device does not know opens nothing.
        var foreign = payload
        var block = try #require(payload["bookorbit"] as? [String: Any])
        block["s"] = UUID().uuidString.lowercased()
        foreign["bookorbit"] = block
        #expect(await shelf.open(push: try JSONSerialization.data(withJSONObject: foreign)) == nil)
        #expect(shelf.notice != nil && shelf.selection == handle)
        shelf.notice = nil

        await shelf.signOut()
        #expect(!shelf.isSignedIn && shelf.books.isEmpty && shelf.feed.isEmpty)
        #expect(shelf.notice == nil, "the server confirmed the sign-out")
        let vault = try FileVault(directory: files.file("vault"))
        #expect(try vault.token(for: preview.identity.instanceId.description) == nil)
        #expect(try vault.token(for: try #require(shelf.client.directory.server(friends)).key) != nil)
    }

    @Test("an address that is not a server, or plain HTTP where only HTTPS is taken, is told and keeps nothing")
    func badAddresses() async throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let shelf = try shelf(files)
        await shelf.lookUp("http://127.0.0.1:\(try RawHTTP.freePort())")
        #expect(shelf.notice?.title.isEmpty == false)
        #expect(shelf.step == nil && shelf.servers.isEmpty)

        let strict = Shelf(client: shelf.client)
        await strict.lookUp("http://192.168.1.20:8080")
        #expect(strict.notice?.title.isEmpty == false && strict.step == nil)
        await strict.lookUp("not an address")
        #expect(strict.step == nil && strict.client.directory.all.isEmpty)
    }

    @Test("the operator holds the account: the app hears the sign-out, forgets the server's books and says why")
    func heldByTheOperator() async throws {
        let home = try Library(hosts: ["127.0.0.1"])
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let shelf = try shelf(files)
        let following = Task { await shelf.follow() }
        defer { following.cancel() }
        await shelf.lookUp(home.url("127.0.0.1"))
        await shelf.signIn(email: "ada@example.com", password: Self.password, creatingAccount: true)
        await shelf.add(title: "Kindred")
        #expect(shelf.isSignedIn && shelf.books.count == 1)

        let held = try ServerProcess.runProgram(
            Self.binary,
            ["users", "hold", "ada@example.com", "--database", "sqlite:" + home.files.file("bookorbit.sqlite")])
        #expect(held.status == 0, "\(held.error)")
        // Every replica stops taking the session within a second; the app hears it at its next request.
        let told = await eventually { () async -> Bool in
            await shelf.refresh()
            return shelf.notice != nil
        }
        #expect(told)
        #expect(shelf.notice?.title.hasPrefix("You were signed out") == true, "\(String(describing: shelf.notice))")
        #expect(!shelf.isSignedIn && shelf.books.isEmpty)
        #expect(shelf.selection != nil, "the server stays on the list, to sign in again")
    }

    @Test("signing in again at the stored primary, which now answers as another installation, sends no password there")
    func signInChecksThePrimary() async throws {
        let home = try Library(hosts: ["127.0.0.1"])
        // On another network, the address the record keeps is someone else's: a listener that
        // says it is another BookOrbit and records all it hears.
        let stranger = try RecordingListener(
            behaviour: .routes([
                HomeportPath.serverIdentity: .init(
                    200, ["Content-Type": "application/json"],
                    #"{"instanceId":"\#(UUID().uuidString.lowercased())","product":"bookorbit","protocolVersion":1}"#)
            ]))
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let shelf = try shelf(files)
        await shelf.lookUp(home.url("127.0.0.1"))
        await shelf.signIn(email: "ada@example.com", password: Self.password, creatingAccount: true)
        await shelf.signOut()
        let key = try #require(shelf.selected?.key)
        let elsewhere = try ServerAddress(parsing: stranger.url, allowHTTP: true)
        _ = try shelf.client.directory.update(key) { $0.primary = elsewhere }

        await shelf.signIn(email: "ada@example.com", password: Self.password)
        #expect(!shelf.isSignedIn && shelf.step == nil)
        // Told, in the client's words (the address does not prove the installation's key) or the
        // model's (it answers as another installation).
        #expect(shelf.notice?.title.isEmpty == false)
        #expect(!stranger.requests.contains { $0.contains("login") }, "no sign-in reached it")
        #expect(!stranger.received.contains { String(decoding: $0, as: UTF8.self).contains(Self.password) })
    }
}
