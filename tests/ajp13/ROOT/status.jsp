<%@ page contentType="text/plain" session="false" trimDirectiveWhitespaces="true" %><%
// Answers with the status ?code= asks for, and a short body.
int code = Integer.parseInt(request.getParameter("code"));
response.setStatus(code);
if (code == 302) response.setHeader("Location", "http://example.com/elsewhere");
out.print("status " + code + "\n");
%>
