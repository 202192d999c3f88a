import Foundation
import Testing

@testable import SyncServer

@Suite struct TLSTests {
    /// A self-signed certificate for 127.0.0.1 and its key, made with the `openssl` command.
    private static func makeCertificate(in directory: TemporaryDirectory, name: String) throws -> (
        certificate: String, key: String
    ) {
        let certificate = directory.path("\(name)-cert.pem")
        let key = directory.path("\(name)-key.pem")
        let result = try run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-addext",
                "subjectAltName=IP:127.0.0.1", "-days", "1", "-keyout", key, "-out", certificate,
            ])
        #expect(result.status == 0, "openssl req: \(String(decoding: result.error, as: UTF8.self))")
        return (certificate, key)
    }

    /// A request through `openssl s_client` with certificate and IP verification on.
    private static func requestThroughOpenSSL(port: UInt16, trusting caFile: String) throws -> (
        status: Int32, output: String
    ) {
        let request = "GET /secure?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        let result = try run(
            "/usr/bin/openssl",
            [
                "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", caFile, "-verify_return_error",
                "-verify_ip", "127.0.0.1", "-quiet",
            ], input: Data(request.utf8))
        return (result.status, String(decoding: result.output, as: UTF8.self))
    }

    @Test func servesHTTPSThatVerifies() throws {
        let directory = try TemporaryDirectory()
        let (certificate, key) = try Self.makeCertificate(in: directory, name: "server")
        let server = try HTTPServer(
            configuration: .init(tls: .init(certificatePath: certificate, privateKeyPath: key))
        ) { request in
            .text("secure \(request.path) \(request.queryValue(for: "x") ?? "")")
        }
        defer { server.stop() }

        let result = try Self.requestThroughOpenSSL(port: server.port, trusting: certificate)
        #expect(result.status == 0)
        #expect(result.output.hasPrefix("HTTP/1.1 200"))
        #expect(result.output.hasSuffix("secure /secure 1"))
    }

    @Test func aClientTrustingAnotherCertificateRefusesTheServer() throws {
        let directory = try TemporaryDirectory()
        let (certificate, key) = try Self.makeCertificate(in: directory, name: "server")
        let (other, _) = try Self.makeCertificate(in: directory, name: "other")
        let server = try HTTPServer(
            configuration: .init(tls: .init(certificatePath: certificate, privateKeyPath: key))
        ) { _ in .text("secure") }
        defer { server.stop() }

        let result = try Self.requestThroughOpenSSL(port: server.port, trusting: other)
        #expect(result.status != 0)
        #expect(!result.output.contains("secure"))
    }

    @Test func plainHTTPToATLSServerGetsNoResponseAndIsLogged() throws {
        let directory = try TemporaryDirectory()
        let (certificate, key) = try Self.makeCertificate(in: directory, name: "server")
        let log = Locked<[String]>([])
        let server = try HTTPServer(
            configuration: .init(
                tls: .init(certificatePath: certificate, privateKeyPath: key),
                log: { message in log.withLock { $0.append(message) } })
        ) { _ in .text("secure") }
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("GET", "/")
        #expect(throws: RawHTTPError.self) { _ = try connection.readResponse(timeout: .seconds(2)) }
        #expect(eventually { !log.value.isEmpty }, "libmicrohttpd's TLS error reaches the log sink")
    }

    @Test func missingOrMismatchedTLSFilesAreTypedErrors() throws {
        let directory = try TemporaryDirectory()
        let (certificate, key) = try Self.makeCertificate(in: directory, name: "server")
        let (otherCertificate, _) = try Self.makeCertificate(in: directory, name: "other")
        let missing = directory.path("missing.pem")
        #expect {
            _ = try HTTPServer(
                configuration: .init(tls: .init(certificatePath: certificate, privateKeyPath: missing))
            ) { _ in .text("") }
        } throws: { error in
            guard case .tlsFileUnreadable(let path, _) = error as? HTTPServerError else { return false }
            return path == missing
        }
        #expect {
            _ = try HTTPServer(
                configuration: .init(tls: .init(certificatePath: otherCertificate, privateKeyPath: key))
            ) { _ in .text("") }
        } throws: { error in
            guard case .tlsRejected = error as? HTTPServerError else { return false }
            return true
        }
    }
}
