import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportClient

#if canImport(Glibc)
    import Glibc
#endif

/// What several `homeport` processes (or an app and its extension) keep in one directory: every
/// change is made to the file as it is on disk, under a lock they all take; nobody's change is
/// undone by another's stale copy.
@Suite("State several processes share: read-modify-write under one lock", .tags(.process))
struct SharedStateTests {
    @Test("six `address remove` started together, each with the record as it was, remove all six addresses")
    func parallelRemoves() async throws {
        let installation = try Installation(hosts: ["127.0.0.1"])
        let home = try TemporaryDirectory()
        defer { home.remove() }
        // However slowly six processes start on a busy machine, none gives up waiting for the lock.
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home", "HOMEPORT_LOCK_TIMEOUT": "300"]
        let url = try installation.address("127.0.0.1").url
        #expect(try signUpWithCommandLine(url, environment: environment).status == 0)
        let directory = try ServerDirectory(directory: home.path)
        let key = try #require(directory.all.first?.key)
        let alternatives = (2..<8).map { "http://127.0.0.\($0):9" }
        try directory.update(key) { record in
            record.alternatives = alternatives.map {
                .init(address: try! ServerAddress(parsing: $0, allowHTTP: true), verifiedPaths: ["home": Date()])
            }
        }

        // The barrier: the test holds the lock until all six wait for it, each having read the
        // record with all six addresses when it started.
        let held = try HeldLock(directory.path + ".lock")
        // Each on a thread of its own: a blocking wait must not hold the test pool's threads.
        let runs = alternatives.map { alternative in
            Task { try await Stage.homeport(["address", "remove", key, alternative], environment) }
        }
        try await held.waitForWaiters(alternatives.count)
        held.release()
        for (run, alternative) in zip(runs, alternatives) {
            let result = try await run.value
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("removed \(alternative)"), "\(result.output)")
        }
        let left = try ServerDirectory(directory: home.path).server(key)?.alternatives.map(\.address.url)
        #expect(left == [], "addresses brought back by a stale save: \(left ?? [])")
    }

    @Test("a sign-in does not bring back an alternative that another process removed while it signed in")
    func signInKeepsARemoval() async throws {
        let installation = try Installation(hosts: ["127.0.0.1"])
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        let primary = try installation.address("127.0.0.1")
        #expect(try signUpWithCommandLine(primary.url, environment: environment).status == 0)
        let removedLater = try ServerAddress(parsing: "http://127.0.0.9:9", allowHTTP: true)
        let setup = try ServerDirectory(directory: home.path)
        let key = try #require(setup.all.first?.key)
        try setup.update(key) { $0.alternatives = [.init(address: removedLater, verifiedPaths: ["home": Date()])] }

        // The signing-in process loaded the directory before the other removed the address.
        let signingIn = try ServerDirectory(directory: home.path)
        let client = HomeportClient(
            directory: signingIn, vault: try FileVault(directory: home.file("vault")), networkPath: "home")
        try ServerDirectory(directory: home.path).update(key) { $0.alternatives.removeAll() }
        let result = try await client.login(at: primary, email: "ada@example.com", password: password)
        guard case .signedIn(let record) = result else {
            Issue.record("the sign-in did not end signed in: \(result)")
            return
        }
        #expect(record.alternatives.isEmpty)
        #expect(try ServerDirectory(directory: home.path).server(key)?.alternatives.isEmpty == true)
    }

    @Test(
        "a refusal of the old token does not sign out a sign-in that stored a new one meanwhile; a refusal of the stored one does"
    )
    func signOutComparesTheToken() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let directory = try ServerDirectory(directory: home.path)
        let enrolled = try record(InstanceID(UUID()), primary: "https://books.example.net")
        try directory.save(enrolled)
        let vault = try FileVault(directory: home.file("vault"))
        let client = HomeportClient(directory: directory, vault: vault, networkPath: "home")
        // Another process signed in again: the old token is ended, the new one stored.
        try vault.store(token: "new-token", for: enrolled.key)
        try client.markSignedOut(enrolled.key, refused: "old-token")
        #expect(try vault.token(for: enrolled.key) == "new-token")
        #expect(try ServerDirectory(directory: home.path).server(enrolled.key)?.signedOut == false)
        try client.markSignedOut(enrolled.key, refused: "new-token")
        #expect(try vault.token(for: enrolled.key) == nil)
        #expect(try ServerDirectory(directory: home.path).server(enrolled.key)?.signedOut == true)
    }

    @Test("two processes registering the device with two servers keep both registrations")
    func pushRegistrations() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let first = try DeviceRegistry(directory: home.path)
        let second = try DeviceRegistry(directory: home.path)
        let registration = PushDeviceRegistration(token: String(repeating: "ab", count: 32), environment: .sandbox)
        try first.record(registration, for: "server-a")
        try second.record(registration, for: "server-b")
        try first.setDevice(registration)
        #expect(Set(try DeviceRegistry(directory: home.path).servers.keys) == ["server-a", "server-b"])
        #expect(second.device == registration, "a read sees the other process's change")
    }

    @Test("two processes keeping catalogues of two servers keep both")
    func catalogues() async throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let first = try CatalogueStore(directory: home.path)
        let second = try CatalogueStore(directory: home.path)
        for (store, server) in [(first, "server-a"), (second, "server-b")] {
            _ = try await store.resync(server) { _ in
                .catalogue(NotificationCatalogue(version: "v-\(server)", codes: []))
            }
        }
        let kept = try CatalogueStore(directory: home.path)
        #expect(kept.catalogue(for: "server-a")?.version == "v-server-a")
        #expect(kept.catalogue(for: "server-b")?.version == "v-server-b")
        try second.remove("server-a")
        #expect(first.catalogue(for: "server-a") == nil)
    }

    @Test("a bad HOMEPORT_LOCK_TIMEOUT is a usage error")
    func badLockTimeout() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        for bad in ["0", "soon", "99999"] {
            let run = try ServerProcess.runClient(
                ["servers"], environment: ["HOMEPORT_HOME": home.path, "HOMEPORT_LOCK_TIMEOUT": bad])
            #expect(run.status == 2 && run.error.contains("HOMEPORT_LOCK_TIMEOUT"), "\(bad): \(run.error)")
        }
    }

    @Test("a change waits for another process's lock a bounded time, then says who holds it")
    func lockTimeout() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let directory = try ServerDirectory(directory: home.path, lockTimeout: .milliseconds(300))
        let held = try HeldLock(directory.path + ".lock", holder: "process 4242 (homeport login)")
        defer { held.release() }
        let started = ContinuousClock.now
        #expect {
            try directory.save(try record(InstanceID(UUID()), primary: "https://a.example.net"))
        } throws: { error in
            "\(error)".contains("process 4242 (homeport login)") && "\(error)".contains("still locked")
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(directory.all.isEmpty, "nothing was written")
    }
}

/// A lock file held by the test, as another process would hold it.
final class HeldLock: @unchecked Sendable {
    let path: String
    private var fd: Int32

    init(_ path: String, holder: String = "the test") throws {
        self.path = path
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0, flock(fd, LOCK_EX) == 0 else { throw RawHTTPError("cannot lock \(path)") }
        _ = ftruncate(fd, 0)
        _ = holder.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    /// Waits until `count` other processes have the lock file open (they open it, then wait for
    /// the lock), at most 240 s.
    func waitForWaiters(_ count: Int) async throws {
        let me = String(getpid())
        let arrived = await eventually(timeout: .seconds(240)) { () async -> Bool in
            let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return processes.filter { pid in
                guard pid != me, pid.allSatisfy(\.isNumber),
                    let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
                else { return false }
                return fds.contains {
                    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == path
                }
            }.count >= count
        }
        if arrived { return }
        throw RawHTTPError("fewer than \(count) processes came to wait for \(path)")
    }

    func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }
}
