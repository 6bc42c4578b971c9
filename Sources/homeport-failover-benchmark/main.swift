import Foundation
import HomeportClient
import HomeportWire

// Benchmark (not a test): time to the first successful authenticated request when the preferred
// address is live, blackholed or refusing, for Homeport's racing strategy and two references:
// sequential tries with an 8 s timeout (what today's apps do) and a 250 ms Happy-Eyeballs stagger.
// Run by benchmarks/failover, which starts the servers and the blackhole.
//
// Usage: homeport-failover-benchmark LIVE_URL SECOND_LIVE_URL BLACKHOLE_URL REFUSED_URL ROUNDS LIVE_ROUNDS [LAN_HTTPS_URL]
//
// ROUNDS is the blackholed row's (its sequential reference waits out an 8 s timeout in each);
// LIVE_ROUNDS every other row's, where a round takes milliseconds: a round's time on this host
// falls in one of two modes (about 1.2 ms or 2.5–7 ms for an HTTPS request, as the two cores are
// free or taken), and a median of five lands in the slow one for one side and not the other in
// about one run in three.
//
// LAN_HTTPS_URL is the second live server's listener with the installation's own certificate
// (--installation-listen): a row measures the race to it, pinned to the installation key.

let arguments = CommandLine.arguments
guard arguments.count == 7 || arguments.count == 8, let rounds = Int(arguments[5]), let liveRounds = Int(arguments[6]),
    rounds > 0, liveRounds > 0
else {
    FileHandle.standardError.write(
        Data("usage: homeport-failover-benchmark LIVE SECOND BLACKHOLE REFUSED ROUNDS LIVE_ROUNDS [LAN_HTTPS]\n".utf8))
    exit(2)
}
let live = try ServerAddress(parsing: arguments[1], allowHTTP: true)
let secondLive = try ServerAddress(parsing: arguments[2], allowHTTP: true)
let blackhole = try ServerAddress(parsing: arguments[3], allowHTTP: true)
let refused = try ServerAddress(parsing: arguments[4], allowHTTP: true)
let pinnedLAN = try arguments.count == 8 ? ServerAddress(parsing: arguments[7]) : nil

let home = NSTemporaryDirectory() + "homeport-failover-\(UUID().uuidString)"
defer { try? FileManager.default.removeItem(atPath: home) }
#if os(Linux)
    let vault: any CredentialVault = try FileVault(directory: home + "/vault")
#else
    // FileVault exists on Linux only.
    let vault: any CredentialVault = KeychainVault(service: "homeport.failover-benchmark")
#endif
let setup = HomeportClient(directory: try ServerDirectory(directory: home), vault: vault)
guard
    case .signedIn(let enrolled) = try await setup.signup(
        at: live, email: "bench-\(UUID().uuidString.prefix(8))@example.com", password: "a long benchmark password")
else { fatalError("signup failed: is the server running with --signup open?") }
let token = try vault.token(for: enrolled.key)!
let transport = HomeportClient.defaultTransport()

/// The identity probe's round trip to the live address on this path, as a client that ran here
/// before has it stored: the median of a few probes as the client makes them (each with a fresh
/// challenge, its signature checked).
func measuredRoundTrip() async throws -> Double {
    let probe = IdentityProbe(transport: transport)
    var samples: [Duration] = []
    // The first probes of a process pay for setting up OpenSSL's verification: not counted.
    for index in 0..<26 {
        let start = ContinuousClock.now
        guard case .match = await probe.probe(secondLive, expected: enrolled.expectedIdentity) else {
            fatalError("the live address did not answer the probe as the installation")
        }
        if index >= 5 { samples.append(ContinuousClock.now - start) }
    }
    return seconds(samples.sorted()[samples.count / 2])
}
let roundTrip = try await measuredRoundTrip()

/// What a signed probe costs over a plain one, at the live address: the median round trip of the
/// identity route without a challenge, and with a fresh one plus the check of its signature.
func probeCosts() async throws -> (plain: Duration, signed: Duration) {
    var plain: [Duration] = []
    var signed: [Duration] = []
    for _ in 0..<201 {
        var start = ContinuousClock.now
        _ = try await transport.send(
            ClientRequest(
                url: live.url(HomeportPath.serverIdentity)!, byteLimit: 1 << 16, deadline: .seconds(3)))
        plain.append(ContinuousClock.now - start)
        start = ContinuousClock.now
        let challenge = InstallationKeyCheck.challenge()
        let response = try await transport.send(
            ClientRequest(
                url: URL(string: live.url(HomeportPath.serverIdentity)!.absoluteString + "?challenge=" + challenge)!,
                byteLimit: 1 << 16, deadline: .seconds(3)))
        let identity = try JSONDecoder().decode(ServerIdentity.self, from: response.body)
        guard let key = identity.publicKey, let signature = identity.signature,
            InstallationKeyCheck.isValid(
                signature: signature, publicKey: key, instanceId: identity.instanceId, challenge: challenge,
                host: live.url(HomeportPath.serverIdentity)!.host ?? "")
        else { fatalError("the live server proved no key: is it running with its secrets key?") }
        signed.append(ContinuousClock.now - start)
    }
    return (median(plain), median(signed))
}
let costs = try await probeCosts()

/// What happens before the timed request.
enum Before {
    /// Nothing: a fresh client's first request, which probes.
    case nothing
    /// The same client made a request: the timed one reuses its winner.
    case sameClient
    /// Another client made one a moment ago (the app launched again within the winner's
    /// lifetime, on this path): the fresh client reuses the verification it stored.
    case earlierLaunch
}

/// Homeport: a fresh client (nothing cached in memory) whose record is what a client that ran on
/// this path before left: `preferred` as its last winner, with the round trip it took here then
/// (the live address's), and the live address verified here; `before` says what came first.
func homeportRace(preferred: ServerAddress, before: Before = .nothing) async throws -> Duration {
    var record = enrolled
    record.primary = preferred
    record.alternatives = [.init(address: live, verifiedPaths: ["bench": Date()])]
    record.lastWinner = preferred.url
    record.signedInPath = "bench"
    record.roundTrips = ["bench " + preferred.url: roundTrip, "bench " + live.url: roundTrip]
    let directory = try ServerDirectory(directory: home + "/\(UUID().uuidString)")
    try directory.save(record)
    var client = HomeportClient(directory: directory, vault: vault, networkPath: "bench")
    switch before {
    case .nothing: break
    case .sameClient: _ = try await client.appInfo(record.key)
    case .earlierLaunch:
        _ = try await client.appInfo(record.key)
        client = HomeportClient(directory: directory, vault: vault, networkPath: "bench")
    }
    let start = ContinuousClock.now
    _ = try await client.appInfo(record.key)
    return ContinuousClock.now - start
}

func authenticated(_ address: ServerAddress, timeout: Duration) async throws {
    var request = ClientRequest(
        url: address.url(HomeportPath.appInfo)!, headers: [HomeportHeader.sessionToken: token], byteLimit: 1 << 20,
        deadline: timeout)
    // The references reach the installation's own certificate pinned, as the client does.
    if address == pinnedLAN { request.pinnedKeySHA256 = enrolled.publicKey.flatMap(InstallationKeyCheck.digest) }
    let response = try await transport.send(request)
    guard response.status == 200 else {
        throw ClientError.badAnswer(address: address.url, detail: "\(response.status)")
    }
}

/// Sequential: the preferred address first, then the next, each with an 8 s timeout.
func sequential(preferred: ServerAddress) async throws -> Duration {
    let start = ContinuousClock.now
    for address in [preferred, live] {
        do {
            try await authenticated(address, timeout: .seconds(8))
            return ContinuousClock.now - start
        } catch {}
    }
    throw ClientError.unreachable(address: "all", reason: "no address answered")
}

/// Happy-Eyeballs stagger: start the preferred at once, the next 250 ms later (or as soon as the
/// preferred fails), first success wins.
func staggered(preferred: ServerAddress) async throws -> Duration {
    let start = ContinuousClock.now
    return try await withThrowingTaskGroup(of: Duration?.self) { group in
        let failed = AsyncStream<Void>.makeStream()
        group.addTask {
            do {
                try await authenticated(preferred, timeout: .seconds(8))
                return ContinuousClock.now - start
            } catch {
                failed.continuation.yield()
                return nil
            }
        }
        group.addTask {
            await withTaskGroup(of: Void.self) { wait in
                wait.addTask { try? await Task.sleep(for: .milliseconds(250)) }
                wait.addTask { for await _ in failed.stream { return } }
                await wait.next()
                wait.cancelAll()
            }
            try await authenticated(live, timeout: .seconds(8))
            return ContinuousClock.now - start
        }
        while let result = try await group.next() {
            if let elapsed = result {
                group.cancelAll()
                return elapsed
            }
        }
        throw ClientError.unreachable(address: "all", reason: "no address answered")
    }
}

func median(_ values: [Duration]) -> Duration { values.sorted()[values.count / 2] }
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
func fine(_ duration: Duration) -> String {
    String(
        format: "%.2f ms", Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15)
}
func ms(_ duration: Duration) -> String {
    let value = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    return String(format: "%.1f ms", value)
}

var scenarios: [(String, ServerAddress, Before)] = [
    ("(a) every address live: a fresh client (probe, then the request)", secondLive, .nothing),
    ("(a) every address live: the same client's next request (its winner reused)", secondLive, .sameClient),
    ("(b) preferred address blackholed", blackhole, .nothing),
    ("(c) preferred address refusing connections", refused, .nothing),
]
if let pinnedLAN {
    scenarios.append(
        (
            "(d) every address live, the preferred over HTTPS with the installation's certificate (fresh client)",
            pinnedLAN, .nothing
        ))
    scenarios.append(
        (
            "(d) the same, a fresh client within a minute of a verification on this path (the app launched again)",
            pinnedLAN, .earlierLaunch
        ))
}
print(
    "Time to the first successful authenticated request — median of \(liveRounds) rounds "
        + "(the blackholed row: \(rounds)), loopback")
print("(the preferred address's round trip on this path, as stored: \(String(format: "%.2f", roundTrip * 1000)) ms)")
print(
    "(every probe is signed: the identity route's round trip is \(fine(costs.plain)) plain, "
        + "\(fine(costs.signed)) with a challenge and its signature checked; median of 201)")
print("")
print(
    "| scenario | Homeport race (window: 3 round trips + 1 ms, ≥ 2 ms) | sequential, 8 s timeout | 250 ms stagger | race ÷ sequential |"
)
print("| --- | ---: | ---: | ---: | ---: |")
var medians: [Duration] = []
var sequentials: [Duration] = []
for (name, preferred, before) in scenarios {
    var race: [Duration] = []
    var sequence: [Duration] = []
    var stagger: [Duration] = []
    for _ in 0..<(preferred == blackhole ? rounds : liveRounds) {
        race.append(try await homeportRace(preferred: preferred, before: before))
        sequence.append(try await sequential(preferred: preferred))
        stagger.append(try await staggered(preferred: preferred))
    }
    medians.append(median(race))
    sequentials.append(median(sequence))
    let ratio = seconds(median(race)) / seconds(median(sequence))
    print(
        "| \(name) | \(ms(median(race))) | \(ms(median(sequence))) | \(ms(median(stagger))) | \(String(format: "%.2f", ratio))× |"
    )
}
/// One machine-readable line per target: `TARGET NAME MEASURED GOAL met|not-met`.
func target(_ name: String, _ measured: Double, atMost goal: Double) {
    let verdict = measured <= goal ? "met" : "not-met"
    print("TARGET \(name) \(String(format: "%.2f", measured)) <=\(String(format: "%g", goal)) \(verdict)")
}
func milliseconds(_ duration: Duration) -> Double { seconds(duration) * 1000 }
print("")
target("next-request-vs-sequential", seconds(medians[1]) / seconds(sequentials[1]), atMost: 1.5)
if medians.count > 5 {
    target("fresh-client-within-the-window-vs-sequential", seconds(medians[5]) / seconds(sequentials[5]), atMost: 1.5)
}
target("blackholed-preferred-ms", milliseconds(medians[2]), atMost: 10)
target("refusing-preferred-ms", milliseconds(medians[3]), atMost: 3)
