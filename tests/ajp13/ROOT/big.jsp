<%@ page contentType="application/octet-stream" session="false" trimDirectiveWhitespaces="true" buffer="8kb" %><%
// ?n= bytes: byte i is 'a' + i % 26, with '\n' for every 64th.
int n = Integer.parseInt(request.getParameter("n"));
char[] line = new char[64];
int at = 0;
while (at < n) {
    int k = Math.min(64, n - at);
    for (int i = 0; i < k; i++) {
        int j = at + i;
        line[i] = (j % 64 == 63) ? '\n' : (char) ('a' + j % 26);
    }
    out.write(line, 0, k);
    at += k;
}
%>
