<%@ page contentType="text/plain; charset=UTF-8" session="false" trimDirectiveWhitespaces="true" %><%
// What the request looked like from Tomcat's side, one "name: value" a line.
java.io.InputStream in = request.getInputStream();
byte[] buf = new byte[8192];
long n = 0, sum = 0;
for (int r; (r = in.read(buf)) > 0; ) {
    for (int i = 0; i < r; i++) sum = (sum + (buf[i] & 0xff)) & 0xffffffffL;
    n += r;
}
response.setHeader("X-Echo", "yes");
response.addHeader("X-Multi", "one");
response.addHeader("X-Multi", "two");
out.print("method: " + request.getMethod() + "\n");
out.print("uri: " + request.getRequestURI() + "\n");
out.print("query: " + request.getQueryString() + "\n");
out.print("protocol: " + request.getProtocol() + "\n");
out.print("remote-addr: " + request.getRemoteAddr() + "\n");
out.print("server-name: " + request.getServerName() + "\n");
out.print("server-port: " + request.getServerPort() + "\n");
out.print("secure: " + request.isSecure() + "\n");
out.print("remote-user: " + request.getRemoteUser() + "\n");
out.print("auth-type: " + request.getAuthType() + "\n");
out.print("cipher: " + request.getAttribute("jakarta.servlet.request.cipher_suite") + "\n");
out.print("key-size: " + request.getAttribute("jakarta.servlet.request.key_size") + "\n");
out.print("content-length: " + request.getContentLengthLong() + "\n");
out.print("body-length: " + n + "\n");
out.print("body-sum: " + sum + "\n");
java.util.List<String> names = java.util.Collections.list(request.getHeaderNames());
java.util.Collections.sort(names);
for (String h : names) {
    for (String v : java.util.Collections.list(request.getHeaders(h))) {
        out.print("header " + h + ": " + v + "\n");
    }
}
%>
