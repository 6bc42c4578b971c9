import Foundation
import HomeportAPNs
import HomeportTestSupport
import Testing

@Suite("The HTTP/2 client's trust", .tags(.process, .interop))
struct APNsClientTrustTests {
    private func request() -> APNsRequest {
        APNsRequest(
            apnsID: "d6a1a6c1-5f8e-4d0c-9a55-3d3f8c1f2a10", deviceToken: String(format: "%064x", 1),
            topic: APNsStandIn.topic, payload: Data(#"{"aps":{}}"#.utf8), expiration: 0, environment: .production)
    }

    /// A CA the stand-in's certificate does not chain to, made in `directory`; its file.
    private func anotherCA(in directory: TemporaryDirectory) throws -> String {
        let made = try ServerProcess.runProgram(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                directory.file("other-key.pem"), "-out", directory.file("other.pem"), "-days", "1", "-subj",
                "/CN=Another CA",
            ])
        #expect(made.status == 0)
        return directory.file("other.pem")
    }

    @Test("a host whose certificate is not trusted, or names another host, gets no request at all")
    func untrusted() throws {
        let standIn = try APNsStandIn()
        let other = try TemporaryDirectory()
        defer { other.remove() }
        let cases: [(url: String, ca: String?, why: String)] = [
            (standIn.url, nil, "not trusted"), (standIn.url, try anotherCA(in: other), "not trusted"),
            ("https://127.0.0.2:\(standIn.port)", standIn.caFile, "not trusted"),
        ]
        for (url, ca, why) in cases {
            let client = APNsClient(
                configuration: .init(productionURL: url, sandboxURL: url, caFile: ca, timeoutSeconds: 5))
            let answer = client.send([request()], authorization: "not-a-real-token")
            #expect(answer.first?.status == 0)
            #expect(answer.first?.transportError?.contains(why) == true, "\(answer)")
        }
        #expect(standIn.requests().isEmpty, "nothing, not even the provider token, reached it")
        let trusted = APNsClient(
            configuration: .init(productionURL: standIn.url, sandboxURL: standIn.url, caFile: standIn.caFile))
        #expect(trusted.send([request()], authorization: "x").first?.status == 403, "the right CA and name get through")
    }

    @Test("a CA file written again is read again: connections trust what it holds now, not what it held")
    func caFileWrittenAgain() throws {
        let standIn = try APNsStandIn()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let other = try Data(contentsOf: URL(fileURLWithPath: try anotherCA(in: directory)))
        let standInCA = try Data(contentsOf: URL(fileURLWithPath: standIn.caFile))
        let path = directory.file("ca.pem")
        // Each client is new (so is its connection); the file at one path changes under them.
        func status(trusting contents: Data) throws -> Int {
            try contents.write(to: URL(fileURLWithPath: path))
            let client = APNsClient(
                configuration: .init(
                    productionURL: standIn.url, sandboxURL: standIn.url, caFile: path, timeoutSeconds: 5))
            return client.send([request()], authorization: "x").first?.status ?? -1
        }
        #expect(try status(trusting: other) == 0)
        #expect(try status(trusting: standInCA) == 403)
        #expect(try status(trusting: standInCA) == 403)
        #expect(try status(trusting: other) == 0, "the stand-in's CA is no longer in the file")
        #expect(try status(trusting: other + standInCA) == 403, "every certificate of a bundle is trusted")
        #expect(try status(trusting: Data("not a certificate\n".utf8)) == 0)
        // A TRUSTED CERTIFICATE block (openssl x509 -trustout) is read as OpenSSL's own loading reads it.
        let trusted = String(decoding: standInCA, as: UTF8.self)
            .replacingOccurrences(of: "BEGIN CERTIFICATE", with: "BEGIN TRUSTED CERTIFICATE")
            .replacingOccurrences(of: "END CERTIFICATE", with: "END TRUSTED CERTIFICATE")
        #expect(try status(trusting: Data(trusted.utf8)) == 403)
        // A bundle with a damaged block is refused whole, not read up to the damage.
        let damaged = standInCA + Data("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8)
        #expect(try status(trusting: damaged) == 0)
        #expect(standIn.requests().count == 4)
        try FileManager.default.removeItem(atPath: path)
        let gone = APNsClient(
            configuration: .init(productionURL: standIn.url, sandboxURL: standIn.url, caFile: path, timeoutSeconds: 5))
        let answer = gone.send([request()], authorization: "x").first
        #expect(answer?.status == 0)
        #expect(answer?.transportError?.contains("cannot load the CA file") == true, "\(String(describing: answer))")
    }
}
