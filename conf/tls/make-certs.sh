#!/usr/bin/env bash
# Makes a private CA and, for each NAME, a PKCS12 keystore NAME.p12 for mutual TLS (the tls: section
# of the server and client YAML). Each keystore holds the NAME's private key with its certificate
# signed by the CA, and the CA certificate as a trusted entry: bolt uses one keystore as both key
# store and trust store, and trusts exactly the certificates this CA signed (it checks no host names).
#
# Usage: conf/tls/make-certs.sh [-d DIR] [-p PASSWORD] [-v DAYS] [NAME...]
#   -d DIR       where to write ca.p12, ca.crt and NAME.p12 (default: the script's directory)
#   -p PASSWORD  password of every keystore (default: changeit; PKCS12 uses it for the keys too)
#   -v DAYS      validity of the certificates (default: 825)
#   NAME...      default: node1 node2 node3 client
# keytool comes from $KEYTOOL, else $JAVA_HOME/bin/keytool, else the PATH.
# An existing ca.p12 in DIR is reused, so new names join the same CA; delete it for a new CA.
set -euo pipefail
trap 'echo "make-certs.sh: failed at line $LINENO (bash -x $0 ... shows keytool'"'"'s output)" >&2' ERR

dir=$(cd "$(dirname "$0")" && pwd)
pass=changeit
days=825
while getopts "d:p:v:h" opt; do
  case $opt in
    d) dir=$OPTARG ;;
    p) pass=$OPTARG ;;
    v) days=$OPTARG ;;
    h) sed -n '2,14p' "$0"; exit 0 ;;
    *) sed -n '9,14p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(node1 node2 node3 client)

if [ -n "${KEYTOOL:-}" ]; then
  keytool=$KEYTOOL
elif [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/keytool" ]; then
  keytool=$JAVA_HOME/bin/keytool
else
  keytool=$(command -v keytool) || { echo "make-certs.sh: keytool not found (install a JDK or set KEYTOOL)" >&2; exit 1; }
fi
[ ${#pass} -ge 6 ] || { echo "make-certs.sh: the password must have at least 6 characters" >&2; exit 2; }

mkdir -p "$dir"
ca=$dir/ca.p12
kt() { "$keytool" -J-Xshare:auto -J-XX:TieredStopAtLevel=1 "$@"; }

if [ ! -f "$ca" ]; then
  kt -genkeypair -alias ca -keyalg EC -groupname secp256r1 -dname "CN=kvraft private CA" \
     -ext bc:c -ext ku:c=keyCertSign,cRLSign -validity "$days" \
     -keystore "$ca" -storetype PKCS12 -storepass "$pass" -keypass "$pass" 2>/dev/null
  echo "made CA $ca"
fi
kt -exportcert -rfc -alias ca -keystore "$ca" -storepass "$pass" -file "$dir/ca.crt" 2>/dev/null

for name in "${names[@]}"; do
  case $name in
    *[!A-Za-z0-9._-]*|"") echo "make-certs.sh: bad name '$name' (letters, digits, . _ -)" >&2; exit 2 ;;
  esac
  ks=$dir/$name.p12
  rm -f "$ks"
  kt -genkeypair -alias "$name" -keyalg EC -groupname secp256r1 -dname "CN=$name" -validity "$days" \
     -keystore "$ks" -storetype PKCS12 -storepass "$pass" -keypass "$pass" 2>/dev/null
  kt -certreq -alias "$name" -keystore "$ks" -storepass "$pass" 2>/dev/null \
    | kt -gencert -alias ca -keystore "$ca" -storepass "$pass" -rfc -validity "$days" \
         -ext ku:c=digitalSignature,keyAgreement -ext eku=serverAuth,clientAuth \
         -ext "san=dns:$name,dns:localhost,ip:127.0.0.1" > "$dir/$name.crt" 2>/dev/null
  kt -importcert -alias ca -file "$dir/ca.crt" -keystore "$ks" -storepass "$pass" -noprompt 2>/dev/null >/dev/null
  kt -importcert -alias "$name" -file "$dir/$name.crt" -keystore "$ks" -storepass "$pass" 2>/dev/null >/dev/null
  rm -f "$dir/$name.crt"
  echo "made $ks"
done
