"""The UI's scripts, served from ``/static/`` (the CSP allows scripts only from there)."""

from __future__ import annotations

from touchstone_ray.doc import REPORT_JS

OVERVIEW_JS = """
(function(){
var box=document.getElementById('groups');if(!box)return;
function refresh(){fetch('/fragment/overview'+location.search,{credentials:'same-origin'})
.then(function(r){return r.ok?r.text():null;})
.then(function(t){if(t!==null&&t!==box.innerHTML)box.innerHTML=t;}).catch(function(){});}
setInterval(refresh,3000);
})();
"""
"""Re-fetches the overview tables every 3 s, so new bundles appear without a reload."""

LIVE_JS = """
(function(){
var box=document.getElementById('live');if(!box)return;
var src=new EventSource(box.getAttribute('data-events'));
src.addEventListener('update',function(ev){box.innerHTML=JSON.parse(ev.data).html;});
src.addEventListener('end',function(ev){box.innerHTML=JSON.parse(ev.data).html;src.close();});
})();
"""
"""Replaces the live cards with each ``update`` event; ``end`` closes the stream."""

JOB_JS = """
(function(){
var box=document.getElementById('job');if(!box)return;
var src=new EventSource(box.getAttribute('data-events'));
function show(ev){var d=JSON.parse(ev.data);
document.getElementById('job-status').textContent=d.status;
document.getElementById('job-log').textContent=d.logs;}
src.addEventListener('update',show);
src.addEventListener('end',function(ev){show(ev);src.close();});
})();
"""
"""Shows a job's status and log text from each event (``textContent``: logs stay text)."""

QUEUE_JS = """
(function(){
var box=document.getElementById('queue');if(!box)return;
function refresh(){fetch(box.getAttribute('data-fragment'),{credentials:'same-origin'})
.then(function(r){return r.ok?r.text():null;})
.then(function(t){if(t!==null&&t!==box.innerHTML)box.innerHTML=t;}).catch(function(){});}
setInterval(refresh,1000);
var form=document.getElementById('queue-add');if(!form)return;
var pack=form.querySelector('[name=pack]'),config=form.querySelector('[name=config]');
var note=document.getElementById('queue-choices-error'),timer=null,last='';
function boxes(id,name,values){var set=document.getElementById(id);
while(set.children.length>1)set.removeChild(set.lastChild);
values.forEach(function(v){var l=document.createElement('label'),c=document.createElement('input');
c.type='checkbox';c.name=name;c.value=v;c.checked=true;l.appendChild(c);
l.appendChild(document.createTextNode(' '+v+' '));set.appendChild(l);});}
function load(){if(!pack.value||!config.value)return;
var q='?pack='+encodeURIComponent(pack.value)+'&config='+encodeURIComponent(config.value);
if(q===last)return;last=q;
fetch('/queue/choices'+q,{credentials:'same-origin'}).then(function(r){return r.json();})
.then(function(d){note.textContent=d.error||'';boxes('queue-models','models',d.models||[]);
boxes('queue-variants','variants',d.variants||[]);}).catch(function(){});}
function later(){clearTimeout(timer);timer=setTimeout(load,300);}
pack.addEventListener('change',later);config.addEventListener('input',later);
config.addEventListener('change',later);
})();
"""
"""The Queue page: re-fetches the entry table every second; fills the add form's model and
variant checkboxes (all checked) from ``/queue/choices`` once a pack and a config are named."""

SCRIPTS = {
    "overview.js": OVERVIEW_JS,
    "live.js": LIVE_JS,
    "report.js": REPORT_JS,
    "job.js": JOB_JS,
    "queue.js": QUEUE_JS,
}
"""File name under ``/static/`` → script text."""
