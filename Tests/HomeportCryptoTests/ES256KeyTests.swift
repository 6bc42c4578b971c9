import HomeportCrypto
import HomeportTestSupport
import Testing

@Suite("ES256 keys")
struct ES256KeyTests {
    @Test("an APNs .p8 key signs ES256 as raw r‖s; other keys are refused, saying why")
    func keys() throws {
        let key = try ES256Key(pem: try OpenSSLKeys.p256())
        let signature = try key.sign(Array("message".utf8))
        #expect(signature.count == 64)
        #expect(try key.sign(Array("message".utf8)) != signature, "ECDSA signatures are randomised")
        let cases: [(String, String)] = [
            ("not a key at all", "not a PEM file"),
            (
                try OpenSSLKeys.make(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
                "not an elliptic-curve key"
            ),
            (
                try OpenSSLKeys.make(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
                "curve is not P-256"
            ),
            ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "cannot read a private key"),
        ]
        for (pem, why) in cases {
            #expect {
                try ES256Key(pem: pem)
            } throws: { String(describing: $0).contains(why) }
        }
    }
}
