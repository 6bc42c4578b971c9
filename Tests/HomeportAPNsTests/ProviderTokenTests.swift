import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportTestSupport
import Testing

@Suite("APNs provider tokens")
struct ProviderTokenTests {
    @Test("a provider token carries kid, iss and iat, and is signed over header.claims")
    func token() throws {
        let token = try ProviderToken.mint(
            key: try ES256Key(pem: try OpenSSLKeys.p256()), keyID: "KEY1234567", teamID: "TEAM123456",
            issuedAt: 1_800_000_000)
        let parts = token.jwt.split(separator: ".")
        #expect(parts.count == 3)
        func decoded(_ part: Substring) -> String {
            var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while text.count % 4 != 0 { text += "=" }
            return String(decoding: Data(base64Encoded: text) ?? Data(), as: UTF8.self)
        }
        #expect(decoded(parts[0]) == #"{"alg":"ES256","kid":"KEY1234567"}"#)
        #expect(decoded(parts[1]) == #"{"iss":"TEAM123456","iat":1800000000}"#)
        #expect(parts[2].count == 86, "64 bytes of signature in base64url")
        #expect(ProviderToken.isAppleID("KEY1234567") && !ProviderToken.isAppleID("key1234567"))
        #expect(!ProviderToken.isAppleID("KEY123456") && !ProviderToken.isAppleID("KEY1234567\""))
    }
}
